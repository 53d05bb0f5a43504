package messages_test

import (
	"testing"

	"github.com/toolsearch/toolsearch/adapters/messages"
	"github.com/toolsearch/toolsearch/internal/refusaltest"
)

// readAs names how a reading lowers a request, in the table's words.
func readAs(r messages.Reading) string {
	if !r.Names {
		return "nothing"
	}
	return map[messages.Strategy]string{messages.StrategyAuto: "client", messages.ReferenceAdd: "inline",
		messages.Classic: "fold", messages.Plain: "emulate"}[r.Below]
}

// TestRefusalTo reads the error texts real endpoints give (each cited in
// the table) against the request they answered.
func TestRefusalTo(t *testing.T) {
	t.Parallel()
	table, err := refusaltest.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range table.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			r := messages.RefusalTo([]byte(tc.Body), []byte(table.Request), table.Betas)
			if got := readAs(r); got != tc.Want {
				t.Fatalf("read as %q (named %s), want %q", got, r.Named(), tc.Want)
			}
			if r.Refused() != (tc.Want == "inline" || tc.Want == "fold" || tc.Want == "emulate") || (r.Refused() && r.Feature == "") {
				t.Fatalf("Refused %v, Feature %q", r.Refused(), r.Feature)
			}
		})
	}
}

// TestRefusalToOnlyWhatWasSent: a name counts only when the request used
// it. The same text refuses the system role of a request that has system
// messages, and names nothing of one that has none.
func TestRefusalToOnlyWhatWasSent(t *testing.T) {
	t.Parallel()
	table, err := refusaltest.Load()
	if err != nil {
		t.Fatal(err)
	}
	full := table.Request
	plain := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	tests := []struct {
		name, sent, body string
		betas            []string
		wantNames        bool
		want             messages.Strategy
	}{
		{"system role, sent", full, `{"error":{"message":"unexpected role 'system'"}}`, nil, true, messages.Classic},
		{"system message by its place", full, `{"error":{"message":"messages.0.role: Input should be 'user' or 'assistant'"}}`, nil, true, messages.Classic},
		{"user message by its place", full, `{"error":{"message":"messages.1.content.0.text.text: Input should be a valid string"}}`, nil, true, messages.StrategyAuto},
		{"system role, not sent", plain, `{"error":{"message":"unexpected role 'system'"}}`, nil, false, messages.StrategyAuto},
		{"tool_reference, not sent", plain, `{"error":{"message":"tool_reference blocks are not supported"}}`, nil, false, messages.StrategyAuto},
		{"tool_reference, not sent, a user message's place", plain, `{"error":{"message":"messages.0.content.0: Input tag 'tool_reference' found using 'type' does not match any of the expected tags"}}`, nil, true, messages.StrategyAuto},
		{"defer_loading, not sent", plain, `{"message":"tools.0.defer_loading: Extra inputs are not permitted"}`, nil, false, messages.StrategyAuto},
		{"top-level system field is no role", `{"model":"m","system":"x","messages":[{"role":"system","content":"x"}]}`, `{"error":{"message":"system: Input should be a valid list"}}`, nil, true, messages.StrategyAuto},
		{"tool_definition, sent", `{"model":"m","messages":[{"role":"system","content":[{"type":"tool_addition","tool":{"type":"tool_definition","definition":{"name":"a"}}}]}]}`, `{"message":"Input tag 'tool_definition' found using 'type' does not match any of the expected tags"}`, nil, true, messages.ReferenceAdd},
		{"inline beta, header", plain, `{"message":"Unexpected value(s) ` + "`inline-tools-2026-09-15`" + ` for the anthropic-beta header"}`, []string{"inline-tools-2026-09-15"}, true, messages.ReferenceAdd},
		{"betas comma-separated", plain, `{"message":"advanced-tool-use-2025-11-20 is not a valid beta"}`, []string{"a-1, advanced-tool-use-2025-11-20"}, true, messages.Plain},
		{"beta in the body", `{"model":"m","anthropic_beta":["tool-search-tool-2025-10-19"],"messages":[]}`, `{"message":"tool-search-tool-2025-10-19 is not a valid beta"}`, nil, true, messages.Plain},
		{"server search tool", `{"model":"m","tools":[{"type":"tool_search_tool_bm25_20251119","name":"tool_search_tool_bm25"}],"messages":[]}`, `{"message":"tools.0: Input tag 'tool_search_tool_bm25_20251119' found using 'type' does not match any of the expected tags"}`, nil, true, messages.Plain},
		{"mcp toolset default_config", `{"model":"m","tools":[{"type":"mcp_toolset","mcp_server_name":"gh","default_config":{"defer_loading":true}}],"messages":[]}`, `{"message":"tools.0.default_config.defer_loading: Extra inputs are not permitted"}`, nil, true, messages.Plain},
		{"a schema's keys are the client's", `{"model":"m","tools":[{"name":"t","input_schema":{"type":"object","properties":{"tool_reference":{"type":"string"}}}}],"messages":[]}`, `{"message":"tool_reference is not allowed"}`, nil, false, messages.StrategyAuto},
		{"not a JSON request", `not json`, `{"message":"unexpected role 'system'"}`, nil, false, messages.StrategyAuto},
		{"no request at all", ``, `{"message":"tool_reference is not supported"}`, nil, false, messages.StrategyAuto},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := messages.RefusalTo([]byte(tt.body), []byte(tt.sent), tt.betas)
			if r.Names != tt.wantNames || r.Below != tt.want {
				t.Fatalf("Names %v Below %s (%s), want Names %v Below %s", r.Names, r.Below, r.Named(), tt.wantNames, tt.want)
			}
		})
	}
}

// TestReadingChanges: a reading says which plainer strategies would change
// the request, so that a caller steps down only where that sends
// something else.
func TestReadingChanges(t *testing.T) {
	t.Parallel()
	table, err := refusaltest.Load()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, sent string
		betas      []string
		want       map[messages.Strategy]bool
	}{
		{"claude code request", table.Request, table.Betas, map[messages.Strategy]bool{messages.Classic: true, messages.Plain: true}},
		{"plain request", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`, nil, nil},
		{"inline beta only", `{"model":"m","messages":[]}`, []string{messages.BetaInlineTools}, map[messages.Strategy]bool{messages.ReferenceAdd: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := messages.RefusalTo([]byte(`{"message":"Request body format invalid"}`), []byte(tt.sent), tt.betas)
			for _, s := range []messages.Strategy{messages.StrategyAuto, messages.Inline, messages.ReferenceAdd, messages.Classic, messages.Plain, messages.Plain + 1} {
				if got := r.Changes(s); got != tt.want[s] {
					t.Errorf("Changes(%s) = %v, want %v", s, got, tt.want[s])
				}
			}
		})
	}
}

// TestRefusalOfReadsTheTable: the reading without a request finds, in
// every text of the table that refuses a feature of the request, a
// feature as plain or plainer (it reads against every feature a
// tool-search request may use), and nothing in the texts that name
// nothing a plainer strategy drops.
func TestRefusalOfReadsTheTable(t *testing.T) {
	t.Parallel()
	table, err := refusaltest.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range table.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			want := map[string]messages.Strategy{"inline": messages.ReferenceAdd, "fold": messages.Classic, "emulate": messages.Plain}[tc.Want]
			r, ok := messages.RefusalOf(tc.Body)
			if ok != (want != messages.StrategyAuto) || r.Below < want {
				t.Fatalf("RefusalOf = %+v, %v; want below %s", r, ok, want)
			}
		})
	}
}
