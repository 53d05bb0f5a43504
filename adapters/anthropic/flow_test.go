package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/toolsearch/toolsearch/adapters/anthropic"
	"github.com/toolsearch/toolsearch/adapters/anthropic/anthropictest"
	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/deferral"
	"github.com/toolsearch/toolsearch/core/discovery"
)

func TestFlows(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		cfg    anthropic.Config
		noRefs bool
		// wantTools begin the tool names of the second request.
		wantTools []string
		// wantDeferred says which of them carry defer_loading (the tools
		// after them are all loaded by the search, hence deferred unless
		// expanding).
		wantDeferred []string
		wantSent     int // tools in the first request
	}{
		{
			name:         "client search",
			cfg:          anthropic.Config{Strategy: anthropic.Classic},
			wantTools:    []string{"files__read_file", "tool_search", "codehost__create_issue"},
			wantDeferred: []string{"codehost__create_issue"},
			wantSent:     2,
		},
		{
			name:         "client search, mcp__ prefix",
			cfg:          anthropic.Config{Strategy: anthropic.Classic, Prefix: "mcp__"},
			wantTools:    []string{"mcp__files__read_file", "tool_search", "mcp__codehost__create_issue"},
			wantDeferred: []string{"mcp__codehost__create_issue"},
			wantSent:     2,
		},
		{
			name:      "expand for an endpoint without references",
			cfg:       anthropic.Config{Wire: anthropic.Expand, NoReferencesWhy: "the proxy refuses tool_reference"},
			noRefs:    true,
			wantTools: []string{"files__read_file", "tool_search", "codehost__create_issue"},
			wantSent:  2,
		},
		{
			name:     "server bm25",
			cfg:      anthropic.Config{Search: anthropic.ServerBM25},
			wantSent: 90,
		},
		{
			name:     "server regex",
			cfg:      anthropic.Config{Search: anthropic.ServerRegex},
			wantSent: 90,
		},
		{
			name:     "search off",
			cfg:      anthropic.Config{Mode: deferral.Mode{Kind: deferral.Off}},
			wantSent: 89,
		},
		{
			name:     "no references: search off",
			cfg:      anthropic.Config{Wire: anthropic.NoReferences},
			noRefs:   true,
			wantSent: 89,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			srv := anthropictest.New(t, anthropictest.Options{NoReferences: tt.noRefs})
			ts := toolset(t, demoSnap(), tt.cfg)
			conv := &anthropic.Conversation{}
			turns := run(ctx, t, ts, client(srv), conv, "Create an issue on the code host about the login bug")
			if rej := srv.Rejections(); len(rej) > 0 {
				t.Fatalf("the stand-in refused: %q", rej)
			}
			if got := lastText(conv); !strings.Contains(got, "Done: ok: ran codehost/create_issue") {
				t.Fatalf("the model ended with %q", got)
			}
			if turns[0].ToolsSent != tt.wantSent {
				t.Errorf("first request sent %d tools, want %d", turns[0].ToolsSent, tt.wantSent)
			}
			if tt.wantTools != nil {
				names, deferred := toolsOf(t, turns[1].Params)
				if len(names) < len(tt.wantTools) || !slices.Equal(names[:len(tt.wantTools)], tt.wantTools) {
					t.Errorf("second request's tools = %q, want them to begin with %q", names, tt.wantTools)
				}
				for i, n := range names {
					want := slices.Contains(tt.wantDeferred, n) || (i >= len(tt.wantTools) && tt.wantDeferred != nil)
					if deferred[n] != want {
						t.Errorf("%s: defer_loading = %v", n, deferred[n])
					}
				}
			}
			if tt.noRefs {
				for _, b := range srv.Requests() {
					if strings.Contains(string(b), `"tool_reference"`) || strings.Contains(string(b), "defer_loading") {
						t.Fatalf("a request to a proxy without references holds them: %s", b)
					}
				}
			}
		})
	}
}

func TestDecisionReasons(t *testing.T) {
	t.Parallel()
	ts := toolset(t, demoSnap(), anthropic.Config{Wire: anthropic.NoReferences, NoReferencesWhy: "the gateway drops tool_reference blocks"})
	if d := ts.Decision(); d.SearchOn || !strings.Contains(d.Why(), "the gateway drops tool_reference blocks") {
		t.Fatalf("decision: %v, %q", d.SearchOn, d.Why())
	}
	auto := toolset(t, demoSnap(), anthropic.Config{Mode: deferral.Mode{Kind: deferral.Auto}})
	if d := auto.Decision(); d.SearchOn || !strings.Contains(d.Why(), "not more than 10%") {
		t.Fatalf("auto on the small demo catalog: %v, %q", d.SearchOn, d.Why())
	}
	auto1 := toolset(t, demoSnap(), anthropic.Config{Mode: deferral.Mode{Kind: deferral.Auto, Percent: 1}})
	if d := auto1.Decision(); !d.SearchOn {
		t.Fatalf("auto:1 on the demo catalog: %q", d.Why())
	}
	if _, err := anthropic.NewToolset(anthropic.Source{Snapshot: demoSnap()}, anthropic.Config{Wire: anthropic.Expand, Search: anthropic.ServerBM25}); err == nil {
		t.Fatal("Expand with server-side search accepted")
	}
	if _, err := anthropic.NewToolset(anthropic.Source{Snapshot: demoSnap()}, anthropic.Config{Strategy: anthropic.Classic}); err == nil {
		t.Fatal("client-side search without an index accepted")
	}
	var raws []json.RawMessage
	for i := range anthropic.MaxServerDeferred + 1 {
		raws = append(raws, json.RawMessage(fmt.Sprintf(`{"name":"t%d","inputSchema":{"type":"object"}}`, i)))
	}
	srv, err := catalog.NewServer("huge", raws, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	huge, err := catalog.NewSnapshot(srv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := anthropic.NewToolset(anthropic.Source{Snapshot: huge}, anthropic.Config{Search: anthropic.ServerBM25}); err == nil || !strings.Contains(err.Error(), "at most 10000") {
		t.Fatalf("10,001 deferred tools with server-side search: %v", err)
	}
}

// builtins are a host's own tools: one loaded, one deferred, one primary.
func builtins() []anthropic.Builtin {
	tool := func(name, desc string) sdk.ToolUnionParam {
		return sdk.ToolUnionParam{OfTool: &sdk.ToolParam{Name: name, Description: param.NewOpt(desc),
			InputSchema: sdk.ToolInputSchemaParam{Properties: map[string]any{"path": map[string]any{"type": "string"}}}}}
	}
	return []anthropic.Builtin{
		{Tool: tool("read_local_file", "Read a file of the local workspace.")},
		{Tool: tool("render_notebook", "Render a Jupyter notebook as HTML for preview."), Defer: true},
		{Tool: tool("send_user_message", "Send a message to the user."), Primary: true, Defer: true},
	}
}

func TestBuiltins(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := anthropictest.New(t, anthropictest.Options{})
	ts := toolset(t, demoSnap(), anthropic.Config{Strategy: anthropic.Classic, Builtins: builtins()})
	d := ts.Decision()
	if !d.IsDeferred("render_notebook") || d.IsDeferred("send_user_message") || d.IsDeferred("read_local_file") {
		t.Fatalf("built-ins: %v", d.Reasons)
	}
	conv := &anthropic.Conversation{}
	turns := run(ctx, t, ts, client(srv), conv, "render the notebook as html preview")
	if rej := srv.Rejections(); len(rej) > 0 {
		t.Fatalf("refused: %q", rej)
	}
	names, _ := toolsOf(t, turns[0].Params)
	if want := []string{"read_local_file", "send_user_message", "files__read_file", "tool_search"}; !slices.Equal(names, want) {
		t.Fatalf("first tools %q, want %q", names, want)
	}
	names, deferred := toolsOf(t, turns[1].Params)
	if names[4] != "render_notebook" || !deferred["render_notebook"] {
		t.Fatalf("the deferred built-in was not loaded: %q", names)
	}
	// The first announcement lists the deferred built-in by name.
	if a := turns[0].Announcement.Text(); !strings.Contains(a, "\nrender_notebook\n") {
		t.Fatalf("announcement:\n%s", a)
	}
	if got := lastText(conv); !strings.Contains(got, "Done: no such tool: render_notebook") {
		// The host runs its own built-ins; Resolve only routes MCP tools.
		t.Fatalf("ended with %q", got)
	}
}

func TestAnswerSearch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ts := toolset(t, demoSnap(), anthropic.Config{Strategy: anthropic.Classic})
	expand := toolset(t, demoSnap(), anthropic.Config{Wire: anthropic.Expand})
	tests := []struct {
		name     string
		ts       *anthropic.Toolset
		input    string
		wantJSON []string
		loaded   []string
		isError  bool
	}{
		{
			name:     "select two",
			ts:       ts,
			input:    `{"query":"select:codehost__create_issue,teamchat__postMessage"}`,
			wantJSON: []string{`{"tool_name":"codehost__create_issue","type":"tool_reference"}`, `{"tool_name":"teamchat__postMessage","type":"tool_reference"}`},
			loaded:   []string{"codehost__create_issue", "teamchat__postMessage"},
		},
		{
			name:     "keywords with max_results",
			ts:       ts,
			input:    `{"query":"scale kubernetes deployment","max_results":1}`,
			wantJSON: []string{`"tool_name":"kube__scaleDeployment"`},
			loaded:   []string{"kube__scaleDeployment"},
		},
		{
			name:     "several needs in one list, named tools first",
			ts:       ts,
			input:    `{"queries":["scale kubernetes deployment","select:teamchat__postMessage"],"max_results":2}`,
			wantJSON: []string{`{"tool_name":"teamchat__postMessage","type":"tool_reference"}`, `{"tool_name":"kube__scaleDeployment","type":"tool_reference"}`},
			loaded:   []string{"teamchat__postMessage", "kube__scaleDeployment"},
		},
		{
			name:     "query and queries",
			ts:       ts,
			input:    `{"query":"select:codehost__create_issue","queries":["select:teamchat__postMessage","select:codehost__create_issue"]}`,
			wantJSON: []string{`"tool_name":"codehost__create_issue"`, `"tool_name":"teamchat__postMessage"`},
			loaded:   []string{"codehost__create_issue", "teamchat__postMessage"},
		},
		{
			name:     "a bad query among several is named",
			ts:       ts,
			input:    `{"queries":["scale a deployment",""]}`,
			wantJSON: []string{`"is_error":true`, `queries[1]: bad query: the query is empty`},
			isError:  true,
		},
		{
			name:     "no match of several",
			ts:       ts,
			input:    `{"queries":["+zzzqqq","+qqqzzz"]}`,
			wantJSON: []string{`No deferred tool matched \"+zzzqqq\" or \"+qqqzzz\".`},
		},
		{
			name:     "no match names the nearest servers",
			ts:       ts,
			input:    `{"query":"+zzzqqq"}`,
			wantJSON: []string{`No deferred tool matched \"+zzzqqq\".`},
		},
		{
			name:     "unknown select name",
			ts:       ts,
			input:    `{"query":"select:nope_tool"}`,
			wantJSON: []string{`Unknown names: nope_tool.`},
		},
		{
			name:     "bad query is an error result",
			ts:       ts,
			input:    `{"query":""}`,
			wantJSON: []string{`"is_error":true`, `the query is empty`},
			isError:  true,
		},
		{
			name:     "bad input",
			ts:       ts,
			input:    `[1]`,
			wantJSON: []string{`"is_error":true`},
			isError:  true,
		},
		{
			name:     "expand answers in text",
			ts:       expand,
			input:    `{"query":"select:codehost__create_issue"}`,
			wantJSON: []string{`"text":"Loaded tools: codehost__create_issue"`},
			loaded:   []string{"codehost__create_issue"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, err := tt.ts.AnswerSearch(ctx, "toolu_1", []byte(tt.input))
			if err != nil {
				t.Fatal(err)
			}
			got := mustJSON(t, a.Block)
			for _, w := range tt.wantJSON {
				if !strings.Contains(got, w) {
					t.Errorf("answer %s\nlacks %s", got, w)
				}
			}
			if !slices.Equal(a.Loaded, tt.loaded) {
				t.Errorf("loaded %q, want %q", a.Loaded, tt.loaded)
			}
			if a.References != (len(tt.loaded) > 0 && tt.ts == ts) {
				t.Errorf("References = %v", a.References)
			}
		})
	}
	msg := anthropic.ResultsMessage([]sdk.ContentBlockParamUnion{sdk.NewTextBlock("note"), sdk.NewToolResultBlock("toolu_2", "ok", false)},
		anthropic.SearchAnswer{Block: sdk.NewToolResultBlock("toolu_1", "x", false), References: true})
	got := mustJSON(t, msg)
	if i, j, k := strings.Index(got, "toolu_2"), strings.Index(got, `"note"`), strings.Index(got, "Tool loaded."); !(i < j && j < k) || i < 0 {
		t.Fatalf("ResultsMessage order: %s", got)
	}
}

// TestAnnouncementsInConversation checks that the delta announcement is
// written into the conversation once and read back from it.
func TestAnnouncementsInConversation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := anthropictest.New(t, anthropictest.Options{})
	c := client(srv)
	snap := without(t, demoSnap(), "kube")
	conv := &anthropic.Conversation{}
	turns := run(ctx, t, toolset(t, snap, anthropic.Config{Strategy: anthropic.Classic}, "kube"), c, conv, "list the open issues of the code host")
	first := turns[0].Announcement
	if first.Empty() || !first.ConnectingSet || !slices.Equal(first.Connecting, []string{"kube"}) {
		t.Fatalf("first announcement: %+v", first)
	}
	for _, tr := range turns[1:] {
		if !tr.Announcement.Empty() {
			t.Fatalf("announced again without a change: %s", tr.Announcement.Text())
		}
	}
	// kube connects.
	turns = run(ctx, t, toolset(t, demoSnap(), anthropic.Config{Strategy: anthropic.Classic}), c, conv, "scale the web deployment on kubernetes")
	a := turns[0].Announcement
	if !a.ConnectingSet || len(a.Connecting) != 0 || len(a.Added) != 11 || !strings.HasPrefix(a.Added[0].Name, "kube__") {
		t.Fatalf("second announcement:\n%s", a.Text())
	}
	if got := lastText(conv); !strings.Contains(got, "kube/scaleDeployment") {
		t.Fatalf("ended with %q", got)
	}
	raws := []string{}
	for _, m := range conv.Messages {
		raws = append(raws, mustJSON(t, m))
	}
	n := 0
	for _, r := range raws {
		n += strings.Count(r, "Deferred tools exist but are not loaded")
	}
	if n != 2 {
		t.Fatalf("%d announcements in the conversation, want 2", n)
	}
	if _, ok := discovery.ParseAnnouncement(a.Text()); !ok {
		t.Fatal("announcement does not parse")
	}
}
