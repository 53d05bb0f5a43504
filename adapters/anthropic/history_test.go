package anthropic_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/toolsearch/toolsearch/adapters/anthropic"
	"github.com/toolsearch/toolsearch/adapters/anthropic/anthropictest"
	"github.com/toolsearch/toolsearch/core/discovery"
)

// discovered runs one task with client-side search and returns the
// conversation, which has loaded codehost tools by reference.
func discovered(t *testing.T) *anthropic.Conversation {
	t.Helper()
	srv := anthropictest.New(t, anthropictest.Options{})
	conv := &anthropic.Conversation{}
	run(context.Background(), t, toolset(t, demoSnap(), anthropic.Config{Strategy: anthropic.Classic}), client(srv), conv, "Create an issue on the code host about the login bug")
	return conv
}

func marshalAll(t testing.TB, msgs []sdk.MessageParam) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	for _, m := range msgs {
		out = append(out, json.RawMessage(mustJSON(t, m)))
	}
	return out
}

func TestReadHistory(t *testing.T) {
	t.Parallel()
	conv := discovered(t)
	h := anthropic.ReadHistory(marshalAll(t, conv.Messages), "tool_search")
	loaded := h.Loaded().Names()
	if len(loaded) == 0 || loaded[0] != "codehost__create_issue" {
		t.Fatalf("loaded %q", loaded)
	}
	if h.Announcements != 1 {
		t.Fatalf("%d announcements read", h.Announcements)
	}
	// Same history, same set.
	again := anthropic.ReadHistory(marshalAll(t, conv.Messages), "tool_search")
	if !slices.Equal(again.Loaded().Names(), loaded) {
		t.Fatal("ReadHistory is not deterministic")
	}
	// Server-side results and LoadedText count too; LoadedText only in
	// answers of the search tool.
	raw := []json.RawMessage{
		json.RawMessage(`{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"tool_search_tool_bm25","input":{"query":"x"}},{"type":"tool_search_tool_result","tool_use_id":"srvtoolu_1","content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"a__x"}]}},{"type":"tool_use","id":"toolu_1","name":"tool_search","input":{"query":"y"}},{"type":"tool_use","id":"toolu_2","name":"other","input":{}}]}`),
		json.RawMessage(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"Loaded tools: b__y"}]},{"type":"tool_result","tool_use_id":"toolu_2","content":"Loaded tools: c__z"}]}`),
		json.RawMessage(`{"role":"user","content":"Tools loaded before this summary: d__w"}`),
		json.RawMessage(`not json`),
	}
	h = anthropic.ReadHistory(raw, "tool_search")
	if got, want := h.Loaded().Names(), []string{"a__x", "b__y", "d__w"}; !slices.Equal(got, want) {
		t.Fatalf("loaded %q, want %q", got, want)
	}
	if got := h.Carried().Names(); !slices.Equal(got, []string{"d__w"}) {
		t.Fatalf("carried %q", got)
	}
}

// TestReconcileRemovedServer continues a conversation whose discovered tool
// has left the catalog. The stand-in refuses a reference to a tool absent
// from tools, exactly as the API does; Turn must never send one.
func TestReconcileRemovedServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	gone := without(t, demoSnap(), "codehost")

	// Without reconciling, the request is a 400.
	srv := anthropictest.New(t, anthropictest.Options{})
	conv := discovered(t)
	turn, err := toolset(t, gone, anthropic.Config{Strategy: anthropic.Classic}).Turn(&anthropic.Conversation{Messages: conv.Messages}, sdk.MessageNewParams{Model: "m", MaxTokens: 10})
	if err != nil {
		t.Fatal(err)
	}
	bad := turn.Params
	bad.Messages = conv.Messages // the history as it is, references and all
	body := mustJSON(t, bad)
	resp, err := http.Post(srv.URL+"/v1/messages", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if rej := srv.Rejections(); resp.StatusCode != 400 || len(rej) != 1 || !strings.Contains(rej[0], "Tool reference 'codehost__create_issue' not found in available tools") {
		t.Fatalf("unreconciled request: %d %q", resp.StatusCode, rej)
	}

	t.Run("definition kept from the last request", func(t *testing.T) {
		t.Parallel()
		srv := anthropictest.New(t, anthropictest.Options{})
		conv := discovered(t)
		before := mustJSON(t, conv.Tools)
		conv.Messages = append(conv.Messages, sdk.NewUserMessage(sdk.NewTextBlock("now post a chat message to the team channel")))
		turn, _, _ := step(ctx, t, toolset(t, gone, anthropic.Config{Strategy: anthropic.Classic}), client(srv), conv)
		if rej := srv.Rejections(); len(rej) > 0 {
			t.Fatalf("refused: %q", rej)
		}
		if turn.Rewritten != 0 {
			t.Fatalf("%d references rewritten; the definitions were at hand", turn.Rewritten)
		}
		// The tools array only grew: the gone tool's definition stayed.
		after := mustJSON(t, turn.Params.Tools)
		if !strings.HasPrefix(after, strings.TrimSuffix(before, "]")) {
			t.Fatalf("tools array changed:\n%s\n%s", before, after)
		}
		// The announcement says it is gone.
		if a := turn.Announcement.Text(); !strings.Contains(a, "removed:\ncodehost__") {
			t.Fatalf("announcement:\n%s", a)
		}
	})
	t.Run("no definition at hand", func(t *testing.T) {
		t.Parallel()
		srv := anthropictest.New(t, anthropictest.Options{})
		conv := discovered(t)
		conv.Tools = nil // a new process that has only the messages
		conv.Messages = append(conv.Messages, sdk.NewUserMessage(sdk.NewTextBlock("now post a chat message to the team channel")))
		turn, _, _ := step(ctx, t, toolset(t, gone, anthropic.Config{Strategy: anthropic.Classic}), client(srv), conv)
		if rej := srv.Rejections(); len(rej) > 0 {
			t.Fatalf("refused: %q", rej)
		}
		if turn.Rewritten == 0 {
			t.Fatal("no reference rewritten")
		}
		if body := mustJSON(t, turn.Params.Messages); !strings.Contains(body, "Tool no longer available: codehost__create_issue") {
			t.Fatalf("messages: %s", body)
		}
		// The conversation itself keeps its references.
		if h := anthropic.ReadHistory(marshalAll(t, conv.Messages), "tool_search"); !h.Loaded().Has("codehost__create_issue") {
			t.Fatal("the conversation lost its reference")
		}
	})
	t.Run("hidden by policy", func(t *testing.T) {
		t.Parallel()
		srv := anthropictest.New(t, anthropictest.Options{})
		conv := discovered(t)
		conv.Messages = append(conv.Messages, sdk.NewUserMessage(sdk.NewTextBlock("now post a chat message to the team channel")))
		hide := anthropic.Config{Strategy: anthropic.Classic, Visible: func(tl *catalogTool) bool { return tl.Server != "codehost" }}
		turn, _, _ := step(ctx, t, toolset(t, demoSnap(), hide), client(srv), conv)
		if rej := srv.Rejections(); len(rej) > 0 {
			t.Fatalf("refused: %q", rej)
		}
		names, _ := toolsOf(t, turn.Params)
		for _, n := range names {
			if strings.HasPrefix(n, "codehost__") {
				t.Fatalf("a hidden tool was sent: %q", names)
			}
		}
	})
}

// TestExpandContinuesReferenceConversation moves a conversation that loaded
// tools by reference to an endpoint that refuses references.
func TestExpandContinuesReferenceConversation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conv := discovered(t)
	proxy := anthropictest.New(t, anthropictest.Options{NoReferences: true})
	ts := toolset(t, demoSnap(), anthropic.Config{Wire: anthropic.Expand})
	turns := run(ctx, t, ts, client(proxy), conv, "Create another issue on the code host about the logout bug")
	if rej := proxy.Rejections(); len(rej) > 0 {
		t.Fatalf("refused: %q", rej)
	}
	body := mustJSON(t, turns[0].Params)
	if strings.Contains(body, "tool_reference") || strings.Contains(body, "defer_loading") {
		t.Fatalf("references reached the proxy: %s", body)
	}
	if !strings.Contains(body, "Loaded tools: codehost__create_issue") {
		t.Fatalf("references not written as text: %s", body)
	}
	names, deferred := toolsOf(t, turns[0].Params)
	if !slices.Contains(names, "codehost__create_issue") || deferred["codehost__create_issue"] {
		t.Fatalf("discovered tool not sent in full: %q", names)
	}
}

// TestExpandServerSearchHistory rewrites server search blocks as text.
func TestExpandServerSearchHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := anthropictest.New(t, anthropictest.Options{})
	conv := &anthropic.Conversation{}
	run(ctx, t, toolset(t, demoSnap(), anthropic.Config{Search: anthropic.ServerBM25}), client(srv), conv, "Create an issue on the code host about the login bug")
	conv.Tools = nil
	proxy := anthropictest.New(t, anthropictest.Options{NoReferences: true})
	turns := run(ctx, t, toolset(t, demoSnap(), anthropic.Config{Wire: anthropic.Expand}), client(proxy), conv, "list the code host issues")
	if rej := proxy.Rejections(); len(rej) > 0 {
		t.Fatalf("refused: %q", rej)
	}
	body := mustJSON(t, turns[0].Params.Messages)
	for _, s := range []string{"server_tool_use", "tool_search_tool_result", "tool_reference"} {
		if strings.Contains(body, s) {
			t.Fatalf("%s reached the proxy: %s", s, body)
		}
	}
	if !strings.Contains(body, "Searched the deferred tools: ") || !strings.Contains(body, "Loaded tools: codehost__create_issue") {
		t.Fatalf("server search not written as text: %s", body)
	}
}

func TestCompactCarriesLoadedTools(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := anthropictest.New(t, anthropictest.Options{})
	c := client(srv)
	ts := toolset(t, demoSnap(), anthropic.Config{Strategy: anthropic.Classic})
	conv := &anthropic.Conversation{}
	run(ctx, t, ts, c, conv, "Create an issue on the code host about the login bug")
	run(ctx, t, ts, c, conv, "scale the web deployment on kubernetes")
	before := anthropic.ReadHistory(marshalAll(t, conv.Messages), "tool_search").Loaded().Names()
	keep := len(conv.Messages) - 1 // keep the final assistant message
	if _, err := ts.Compact(conv, keep-1, "x"); err == nil {
		t.Fatal("Compact cut a tool_use from its tool_result")
	}
	carry, err := ts.Compact(conv, keep, "Summary: an issue was created and the deployment scaled.")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(carry.Names, before) || carry.Kind != discovery.Carried {
		t.Fatalf("carried %q, loaded before %q", carry.Names, before)
	}
	after := anthropic.ReadHistory(marshalAll(t, conv.Messages), "tool_search")
	if got := after.Loaded().Names(); !slices.Equal(got, before) {
		t.Fatalf("after compaction %q, before %q", got, before)
	}
	turns := run(ctx, t, ts, c, conv, "Create an issue on the code host about the logout bug")
	if rej := srv.Rejections(); len(rej) > 0 {
		t.Fatalf("refused: %q", rej)
	}
	names, deferred := toolsOf(t, turns[0].Params)
	for _, n := range before {
		if !slices.Contains(names, n) || deferred[n] {
			t.Fatalf("carried tool %s not sent loaded: %q", n, names)
		}
	}
	// The carried tool is called without a new search.
	if len(turns) != 2 {
		t.Fatalf("%d requests after compaction, want 2 (call, done)", len(turns))
	}
}

// FuzzReadHistory feeds arbitrary JSON to the history reader and the
// rewriter through Turn: nothing panics, and what Turn sends is valid JSON.
func FuzzReadHistory(f *testing.F) {
	f.Add(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"tool_reference","tool_name":"codehost__create_issue"},{"type":"tool_reference","tool_name":"gone__x"}]}]}`)
	f.Add(`{"role":"assistant","content":[{"type":"server_tool_use","id":"s","name":"tool_search_tool_regex","input":{"pattern":"x"}},{"type":"tool_search_tool_result","tool_use_id":"s","content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"nope"}]}}]}`)
	f.Add(`{"role":"user","content":"<deferred-tools>\nadded:\na__b\n</deferred-tools>"}`)
	f.Add(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"tool_reference"}]}`)
	f.Add(hAddDef)
	f.Add(hRemove)
	f.Add(hCompaction)
	f.Add(`{"role":"system","content":[{"type":"tool_addition","tool":{"type":"tool_reference","name":"gone__x"}}]}`)
	ts := toolset(f, demoSnap(), anthropic.Config{Strategy: anthropic.Classic})
	expand := toolset(f, demoSnap(), anthropic.Config{Wire: anthropic.Expand})
	inline := toolset(f, demoSnap(), anthropic.Config{Strategy: anthropic.Inline})
	refAdd := toolset(f, demoSnap(), anthropic.Config{Strategy: anthropic.ReferenceAdd})
	f.Fuzz(func(t *testing.T, msg string) {
		if !json.Valid([]byte(msg)) {
			return
		}
		anthropic.ReadHistory([]json.RawMessage{json.RawMessage(msg)}, "tool_search")
		var m sdk.MessageParam
		if json.Unmarshal([]byte(msg), &m) != nil {
			return
		}
		for _, s := range []*anthropic.Toolset{ts, expand, inline, refAdd} {
			turn, err := s.Turn(&anthropic.Conversation{Messages: []sdk.MessageParam{m}}, sdk.MessageNewParams{Model: "m", MaxTokens: 1})
			if err != nil {
				return // a message the SDK cannot encode
			}
			b, err := json.Marshal(turn.Params)
			if err != nil {
				return
			}
			if !json.Valid(b) {
				t.Fatalf("invalid request JSON: %s", b)
			}
			var sent any
			if err := json.Unmarshal(b, &sent); err != nil {
				t.Fatal(err)
			}
			for _, name := range referencedTools(sent) {
				if name == "gone__x" || name == "nope" {
					t.Fatalf("a reference to a tool not sent survived: %s", b)
				}
			}
		}
	})
}

// referencedTools returns the tool_name of every tool_reference block in
// a decoded request, and the name of every tool a tool change names by
// reference (the same words elsewhere, in a tool's input say, are
// not references).
func referencedTools(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		if v["type"] == "tool_reference" {
			if n, ok := v["tool_name"].(string); ok {
				out = append(out, n)
			}
			// The tool of a tool_addition or tool_removal.
			if n, ok := v["name"].(string); ok {
				out = append(out, n)
			}
		}
		for _, x := range v {
			out = append(out, referencedTools(x)...)
		}
	case []any:
		for _, x := range v {
			out = append(out, referencedTools(x)...)
		}
	}
	return out
}

func TestReconcileAndExpandJSON(t *testing.T) {
	t.Parallel()
	msgs := []json.RawMessage{
		json.RawMessage(`{"role":"user","content":"hi"}`),
		json.RawMessage(`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"tool_search","input":{"query":"x"}}]}`),
		json.RawMessage(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"tool_reference","tool_name":"a__x"},{"type":"tool_reference","tool_name":"gone__y"}]},{"type":"text","text":"Tool loaded."}]}`),
		json.RawMessage(`{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"tool_search_tool_regex","input":{"pattern":"y"}},{"type":"tool_search_tool_result","tool_use_id":"srvtoolu_1","content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"gone__y"},{"type":"tool_reference","tool_name":"a__x"}]}}]}`),
	}
	sent := func(n string) bool { return n == "a__x" }
	out, n := anthropic.Reconcile(msgs, sent)
	if n != 2 {
		t.Fatalf("%d rewritten, want 2", n)
	}
	for i := range 2 {
		if string(out[i]) != string(msgs[i]) {
			t.Fatalf("message %d changed: %s", i, out[i])
		}
	}
	want2 := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"tool_reference","tool_name":"a__x"},{"type":"text","text":"Tool no longer available: gone__y"}]},{"type":"text","text":"Tool loaded."}]}`
	if string(out[2]) != want2 {
		t.Fatalf("reconciled:\n%s\nwant:\n%s", out[2], want2)
	}
	if !strings.Contains(string(out[3]), `"tool_references":[{"type":"tool_reference","tool_name":"a__x"}]`) {
		t.Fatalf("server result: %s", out[3])
	}
	out, n = anthropic.ExpandReferences(msgs, sent)
	if n != 4 {
		t.Fatalf("%d expanded, want 4", n)
	}
	var parts []string
	for _, m := range out {
		parts = append(parts, string(m))
	}
	all := strings.Join(parts, "\n")
	for _, bad := range []string{"tool_reference", "server_tool_use", "tool_search_tool_result"} {
		if strings.Contains(all, bad) {
			t.Fatalf("%s left: %s", bad, all)
		}
	}
	for _, want := range []string{`"text":"Loaded tools: a__x"`, `Tool no longer available: gone__y`, `Searched the deferred tools: {\"pattern\":\"y\"}`} {
		if !strings.Contains(all, want) {
			t.Fatalf("lacks %s: %s", want, all)
		}
	}
	// What was rewritten still reads back as loading the tools sent.
	h := anthropic.ReadHistory(out, "tool_search")
	if got := h.Loaded().Names(); !slices.Equal(got, []string{"a__x"}) {
		t.Fatalf("expanded history loads %q", got)
	}
}
