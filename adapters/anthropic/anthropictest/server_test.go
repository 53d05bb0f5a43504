package anthropictest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

const (
	search   = `{"name":"tool_search","description":"find tools","input_schema":{"type":"object","properties":{"query":{"type":"string"}}}}`
	deferred = `{"name":"gh__create_issue","description":"Create an issue","input_schema":{"type":"object"},"defer_loading":true}`
	loaded   = `{"name":"gh__list_issues","description":"List issues","input_schema":{"type":"object"}}`
	userText = `{"role":"user","content":"create an issue"}`
	useCall  = `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"tool_search","input":{"query":"issue"}}]}`
)

func body(tools, messages string, extra ...string) string {
	b := `{"model":"claude-test","max_tokens":100,"tools":[` + tools + `],"messages":[` + messages + `]`
	for _, e := range extra {
		b += "," + e
	}
	return b + "}"
}

func refResult(name string) string {
	return `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"tool_reference","tool_name":"` + name + `"}]},{"type":"text","text":"Tool loaded."}]}`
}

func TestValidation(t *testing.T) {
	t.Parallel()
	addRef := func(name string) string {
		return `{"role":"system","content":[{"type":"tool_addition","tool":{"type":"tool_reference","name":"` + name + `"}}]}`
	}
	addDef := func(def string) string {
		return `{"role":"system","content":[{"type":"tool_addition","tool":{"type":"tool_definition","definition":` + def + `}}]}`
	}
	remove := func(name string) string {
		return `{"role":"system","content":[{"type":"tool_removal","tool":{"type":"tool_reference","name":"` + name + `"}}]}`
	}
	both := []string{BetaToolChanges, BetaInlineTools}
	inlineDef := `{"name":"gh__close_issue","description":"Close an issue","input_schema":{"type":"object"}}`
	compaction := func(changes string) string {
		return `{"role":"assistant","content":[{"type":"compaction","content":"summary","tool_changes":[` + changes + `]}]}`
	}
	tests := []struct {
		name    string
		noRefs  bool
		opts    Options
		betas   []string
		body    string
		wantErr string // "" for a valid request
	}{
		{name: "system message of text", body: body(loaded, userText+`,{"role":"system","content":"be brief"}`)},
		{name: "empty system message", body: body(loaded, userText+`,{"role":"system","content":[]}`), wantErr: "must have content"},
		{name: "system message refused", opts: Options{NoSystemMessages: true}, body: body(loaded, `{"role":"system","content":"x"}`),
			wantErr: "Input should be 'user' or 'assistant'"},
		{name: "tool_addition by reference", betas: both[:1], body: body(search+","+deferred, userText+","+addRef("gh__create_issue"))},
		{name: "tool_addition without its beta", body: body(search+","+deferred, userText+","+addRef("gh__create_issue")),
			wantErr: "need the anthropic-beta header " + BetaToolChanges},
		{name: "tool_addition of an undeclared tool", betas: both[:1], body: body(search+","+deferred, userText+","+addRef("gh__close_issue")),
			wantErr: "Tool reference 'gh__close_issue' not found in available tools"},
		{name: "tool_addition refused", betas: both[:1], opts: Options{NoToolChanges: true}, body: body(search+","+deferred, userText+","+addRef("gh__create_issue")),
			wantErr: "Input tag 'tool_addition'"},
		{name: "inline definition", betas: both, body: body(search, userText+","+addDef(inlineDef))},
		{name: "inline definition without its beta", betas: both[:1], body: body(search, userText+","+addDef(inlineDef)),
			wantErr: "tool_definition needs the anthropic-beta header " + BetaInlineTools},
		{name: "inline definition refused", betas: both, opts: Options{NoInlineTools: true}, body: body(search, userText+","+addDef(inlineDef)),
			wantErr: "Input tag 'tool_definition'"},
		{name: "inline definition with a bad schema", betas: both, body: body(search, userText+","+addDef(`{"name":"x","input_schema":{"type":"string"}}`)),
			wantErr: "input_schema.type: Input should be 'object'"},
		{name: "inline definition taking a declared name", betas: both, body: body(search+","+loaded, userText+","+addDef(strings.Replace(inlineDef, "gh__close_issue", "gh__list_issues", 1))),
			wantErr: "tool_name_conflict"},
		{name: "inline definition twice", betas: both, body: body(search, userText+","+addDef(inlineDef)+","+addDef(inlineDef)), wantErr: "tool_name_conflict"},
		{name: "removal then definition again", betas: both, body: body(search, userText+","+addDef(inlineDef)+","+remove("gh__close_issue")+","+addDef(inlineDef))},
		{name: "reference to an inline tool", betas: both, body: body(search, userText+","+addDef(inlineDef)+","+remove("gh__close_issue")+","+addRef("gh__close_issue"))},
		{name: "removal of an unknown tool", betas: both[:1], body: body(search, userText+","+remove("gh__nope")), wantErr: "Tool reference 'gh__nope' not found"},
		{name: "system message between tool_use and tool_result", betas: both[:1], body: body(search+","+deferred, userText+","+useCall+","+addRef("gh__create_issue")+","+refResult("gh__create_issue")),
			wantErr: "without `tool_result` blocks immediately after"},
		{name: "an MCP toolset reference", betas: both[:1], body: body(search, userText+`,{"role":"system","content":[{"type":"tool_addition","tool":{"type":"mcp_toolset_reference","server_name":"gh"}}]}`),
			wantErr: "MCP server 'gh' is not in mcp_servers"},
		{name: "compaction tool_changes", betas: both, body: body(search, userText+","+compaction(`{"type":"tool_addition","tool":{"type":"tool_definition","definition":`+inlineDef+`}}`)+`,{"role":"user","content":"go on"}`)},
		{name: "compaction tool_changes of an undeclared tool", betas: both[:1], body: body(search, userText+","+compaction(`{"type":"tool_addition","tool":{"type":"tool_reference","name":"gh__nope"}}`)+`,{"role":"user","content":"go on"}`),
			wantErr: "Tool reference 'gh__nope' not found"},
		{name: "refused beta", betas: both, opts: Options{RefuseBetas: []string{BetaInlineTools}}, body: body(loaded, userText),
			wantErr: "Unexpected value(s) `" + BetaInlineTools + "` for the `anthropic-beta` header"},
		{name: "valid client search", body: body(search+","+deferred, userText+","+useCall+","+refResult("gh__create_issue"))},
		{name: "no tools", body: body("", userText)},
		{name: "every tool deferred", body: body(deferred, userText), wantErr: "All tools have defer_loading"},
		{name: "reference to an absent tool", body: body(search+","+deferred, userText+","+useCall+","+refResult("gh__close_issue")),
			wantErr: "Tool reference 'gh__close_issue' not found in available tools"},
		{name: "reference to a loaded tool", body: body(search+","+loaded, userText+","+useCall+","+refResult("gh__list_issues"))},
		{name: "cache_control on a deferred tool", body: body(search+","+strings.Replace(deferred, `"defer_loading":true`, `"defer_loading":true,"cache_control":{"type":"ephemeral"}`, 1), userText),
			wantErr: "cache_control cannot be set on a tool with defer_loading"},
		{name: "cache_control on a loaded tool", body: body(strings.Replace(search, `"name"`, `"cache_control":{"type":"ephemeral"},"name"`, 1)+","+deferred, userText)},
		{name: "schema without type object", body: body(`{"name":"x","input_schema":{"$schema":"http://json-schema.org/draft-07/schema#"}}`, userText),
			wantErr: "input_schema.type"},
		{name: "bad tool name", body: body(`{"name":"a.b","input_schema":{"type":"object"}}`, userText), wantErr: "String should match pattern"},
		{name: "duplicate tool", body: body(loaded+","+loaded, userText), wantErr: "must be unique"},
		{name: "unanswered tool_use", body: body(search, userText+","+useCall), wantErr: "without `tool_result` blocks immediately after"},
		{name: "tool_result after text", body: body(search, userText+","+useCall+`,{"role":"user","content":[{"type":"text","text":"x"},{"type":"tool_result","tool_use_id":"toolu_1","content":"r"}]}`),
			wantErr: "tool_result blocks must come before"},
		{name: "stray tool_result", body: body(search, userText+`,{"role":"assistant","content":"hi"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_9","content":"r"}]}`),
			wantErr: "unexpected `tool_use_id`"},
		{name: "reference outside a tool_result", body: body(search, `{"role":"user","content":[{"type":"tool_reference","tool_name":"tool_search"}]}`),
			wantErr: "only allowed in tool_result content"},
		{name: "server search result to an absent tool", body: body(`{"type":"tool_search_tool_bm25_20251119","name":"tool_search_tool_bm25"},`+deferred,
			userText+`,{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"tool_search_tool_bm25","input":{"query":"x"}},{"type":"tool_search_tool_result","tool_use_id":"srvtoolu_1","content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"nope"}]}}]}`),
			wantErr: "Tool reference 'nope' not found in available tools"},
		{name: "server tool use without its search tool", body: body(loaded,
			userText+`,{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"tool_search_tool_bm25","input":{"query":"x"}}]}`),
			wantErr: "not a server tool in tools"},
		{name: "proxy: defer_loading", noRefs: true, body: body(search+","+deferred, userText), wantErr: "defer_loading: Extra inputs"},
		{name: "proxy: tool_reference", noRefs: true, body: body(search+","+loaded, userText+","+useCall+","+refResult("gh__list_issues")),
			wantErr: "Input tag 'tool_reference'"},
		{name: "proxy: server search tool", noRefs: true, body: body(`{"type":"tool_search_tool_regex_20251119","name":"tool_search_tool_regex"},`+loaded, userText),
			wantErr: "Input tag 'tool_search_tool_regex_20251119'"},
		{name: "missing max_tokens", body: `{"model":"m","messages":[` + userText + `]}`, wantErr: "max_tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := tt.opts
			opts.NoReferences = opts.NoReferences || tt.noRefs
			srv := New(t, opts)
			req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/messages", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			if len(tt.betas) > 0 {
				req.Header.Set("anthropic-beta", strings.Join(tt.betas, ","))
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if tt.wantErr == "" {
				if resp.StatusCode != 200 {
					t.Fatalf("status %d: %s", resp.StatusCode, b)
				}
				var m struct {
					Type    string            `json:"type"`
					Role    string            `json:"role"`
					Content []json.RawMessage `json:"content"`
				}
				if err := json.Unmarshal(b, &m); err != nil || m.Type != "message" || m.Role != "assistant" || len(m.Content) == 0 {
					t.Fatalf("response %s", b)
				}
				return
			}
			if resp.StatusCode != 400 {
				t.Fatalf("status %d, want 400: %s", resp.StatusCode, b)
			}
			var e struct {
				Type  string `json:"type"`
				Error struct {
					Type    string `json:"type"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(b, &e); err != nil || e.Type != "error" || e.Error.Type != "invalid_request_error" {
				t.Fatalf("error body %s", b)
			}
			if !strings.Contains(e.Error.Message, tt.wantErr) {
				t.Fatalf("error %q, want it to contain %q", e.Error.Message, tt.wantErr)
			}
		})
	}
}

func TestScriptedServerSearch(t *testing.T) {
	t.Parallel()
	for _, typ := range []string{TypeBM25, TypeRegex} {
		req := &Request{
			Model:            "m",
			Tools:            []Tool{{Type: typ, Name: "s"}, {Name: "gh__create_issue", Description: "Create an issue", Deferred: true}, {Name: "x__y", Description: "other", Deferred: true}},
			Messages:         []Message{{Role: "user", Blocks: []Block{{Type: "text", Text: "create an issue"}}}},
			ServerSearch:     typ,
			ServerSearchName: "s",
			Visible:          map[string]bool{"s": true},
		}
		r := ScriptedModel(req)
		b, _ := json.Marshal(r.Content)
		if r.StopReason != "tool_use" || !strings.Contains(string(b), `"tool_name":"gh__create_issue"`) || !strings.Contains(string(b), `"name":"gh__create_issue"`) {
			t.Fatalf("%s: %s %s", typ, r.StopReason, b)
		}
	}
	long := &Request{
		Model:            "m",
		Tools:            []Tool{{Type: TypeRegex, Name: "s"}, {Name: "a__b", Deferred: true}},
		Messages:         []Message{{Role: "user", Blocks: []Block{{Type: "text", Text: strings.Repeat("word ", 60)}}}},
		ServerSearch:     TypeRegex,
		ServerSearchName: "s",
	}
	b, _ := json.Marshal(ScriptedModel(long).Content)
	if !strings.Contains(string(b), "invalid_tool_input") {
		t.Fatalf("a pattern over 200 characters: %s", b)
	}
}
