package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolsearch/toolsearch/adapters/openai"
	"github.com/toolsearch/toolsearch/adapters/openai/openaitest"
	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/catalog/demo"
	"github.com/toolsearch/toolsearch/core/deferral"
	"github.com/toolsearch/toolsearch/core/discovery"
	"github.com/toolsearch/toolsearch/core/search"
)

func client(srv *openaitest.Server) oai.Client {
	return oai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("test-key"), option.WithMaxRetries(0))
}

func toolset(t testing.TB, snap *catalog.Snapshot, cfg openai.Config, connecting ...string) *openai.Toolset {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ts, err := openai.NewToolset(openai.Source{Snapshot: snap, Index: search.Build(snap), Connecting: connecting}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func without(t testing.TB, snap *catalog.Snapshot, keys ...string) *catalog.Snapshot {
	t.Helper()
	var ch []catalog.Change
	for _, k := range keys {
		ch = append(ch, catalog.Remove(k))
	}
	out, _, err := snap.Apply(ch...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// respStep sends one Responses turn and answers its calls; done reports a
// final message.
func respStep(ctx context.Context, t testing.TB, ts *openai.Toolset, c oai.Client, conv *openai.Conversation) (*openai.Turn, *responses.Response, bool) {
	t.Helper()
	turn, err := ts.Turn(conv, responses.ResponseNewParams{Model: "gpt-test"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Responses.New(ctx, turn.Params)
	if err != nil {
		t.Fatalf("request refused: %v", err)
	}
	conv.Input = append(conv.Input, openai.OutputItems(resp)...)
	return turn, resp, answer(ctx, t, ts, conv, resp)
}

// answer answers a response's calls (searches, then the host's functions,
// run as "ok: ran <tool>" or answered by Resolve's error) and reports
// whether the response ended the task.
func answer(ctx context.Context, t testing.TB, ts *openai.Toolset, conv *openai.Conversation, resp *responses.Response) bool {
	t.Helper()
	items, calls, err := ts.AnswerSearches(ctx, resp)
	if err != nil {
		t.Fatal(err)
	}
	conv.Input = append(conv.Input, items...)
	for _, call := range calls {
		out := ""
		if tool, err := ts.Resolve(call.Namespace, call.Name); err != nil {
			out = "Error: " + err.Error()
		} else {
			out = "ok: ran " + tool.ID()
		}
		conv.Input = append(conv.Input, openai.FunctionCallOutput(call.CallID, out))
	}
	return len(items) == 0 && len(calls) == 0
}

func respRun(ctx context.Context, t testing.TB, ts *openai.Toolset, c oai.Client, conv *openai.Conversation, task string) ([]*openai.Turn, string) {
	t.Helper()
	conv.Input = append(conv.Input, openai.UserMessage(task))
	var turns []*openai.Turn
	for range 8 {
		turn, resp, done := respStep(ctx, t, ts, c, conv)
		turns = append(turns, turn)
		if done {
			return turns, resp.OutputText()
		}
	}
	t.Fatalf("task %q did not end", task)
	return nil, ""
}

func TestResponsesFlow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := openaitest.New(t, openaitest.Options{})
	c := client(srv)
	ts := toolset(t, demo.Snapshot(), openai.Config{Builtins: []openai.Builtin{{Name: "send_user_message", Description: "Send a message to the user.", Primary: true}}})
	conv := &openai.Conversation{Instructions: "You are a helpful agent."}
	turns, text := respRun(ctx, t, ts, c, conv, "Create an issue on the code host about the login bug")
	if rej := srv.Rejections(); len(rej) > 0 {
		t.Fatalf("refused: %q", rej)
	}
	if !strings.Contains(text, "Done: ok: ran codehost/create_issue") {
		t.Fatalf("ended with %q", text)
	}
	// The tools array: built-in, always-load tool, tool_search; constant.
	first := mustJSON(t, turns[0].Params.Tools)
	for _, tr := range turns[1:] {
		if mustJSON(t, tr.Params.Tools) != first {
			t.Fatal("the tools array changed")
		}
	}
	if !strings.Contains(first, `"type":"tool_search"`) || !strings.Contains(first, `"execution":"client"`) || !strings.Contains(first, `"name":"files__read_file"`) {
		t.Fatalf("tools: %s", first)
	}
	if turns[0].ToolsSent != 3 || turns[len(turns)-1].LoadedFunctions == 0 {
		t.Fatalf("tools sent %d, loaded %d", turns[0].ToolsSent, turns[len(turns)-1].LoadedFunctions)
	}
	// The tool_search_output holds namespaces with deferred members.
	body := mustJSON(t, conv.Input)
	for _, want := range []string{`"type":"tool_search_output"`, `"type":"namespace"`, `"name":"codehost__issue`, `"defer_loading":true`, `"execution":"client"`} {
		if !strings.Contains(body, want) {
			t.Fatalf("conversation lacks %s: %s", want, body)
		}
	}
	// A second task uses the loaded tool without searching again.
	turns, text = respRun(ctx, t, ts, c, conv, "Create an issue on the code host about the logout bug")
	if len(turns) != 2 || !strings.Contains(text, "codehost/create_issue") {
		t.Fatalf("%d turns, ended with %q", len(turns), text)
	}
}

func TestResponsesSearchOff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, cfg := range []openai.Config{{Mode: deferral.Mode{Kind: deferral.Off}}, {Mode: deferral.Mode{Kind: deferral.Off}, NoToolSearch: true}} {
		srv := openaitest.New(t, openaitest.Options{})
		ts := toolset(t, demo.Snapshot(), cfg)
		if ts.Decision().SearchOn {
			t.Fatalf("search on: %s", ts.Decision().Why())
		}
		conv := &openai.Conversation{}
		turns, text := respRun(ctx, t, ts, client(srv), conv, "Create an issue on the code host about the login bug")
		if rej := srv.Rejections(); len(rej) > 0 {
			t.Fatalf("refused: %q", rej)
		}
		if turns[0].ToolsSent != 89 || !strings.Contains(text, "codehost/create_issue") {
			t.Fatalf("%d tools, ended with %q", turns[0].ToolsSent, text)
		}
	}
}

func TestAnswerToolSearch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ts := toolset(t, demo.Snapshot(), openai.Config{})
	ans, err := ts.AnswerToolSearch(ctx, "call_1", json.RawMessage(`{"query":"select:codehost__create_issue,codehost__list_issues,teamchat__postMessage"}`))
	if err != nil {
		t.Fatal(err)
	}
	got := mustJSON(t, ans.Items)
	for _, want := range []string{`"call_id":"call_1"`, `"name":"codehost__issue"`, `"name":"teamchat"`, `"name":"create_issue"`, `"name":"postMessage"`} {
		if !strings.Contains(got, want) {
			t.Errorf("answer lacks %s: %s", want, got)
		}
	}
	if len(ans.Items) != 1 || !slices.Equal(ans.Loaded, []string{"codehost__create_issue", "codehost__list_issues", "teamchat__postMessage"}) {
		t.Fatalf("loaded %q", ans.Loaded)
	}
	// Arguments as a JSON string, as function arguments come.
	ans, err = ts.AnswerToolSearch(ctx, "call_2", json.RawMessage(`"{\"query\":\"+zzzqqq\"}"`))
	if err != nil {
		t.Fatal(err)
	}
	if got := mustJSON(t, ans.Items); len(ans.Items) != 2 || !strings.Contains(got, `"tools":[]`) || !strings.Contains(got, "No deferred tool matched") {
		t.Fatalf("no match: %s", got)
	}
	ans, _ = ts.AnswerToolSearch(ctx, "call_3", json.RawMessage(`{"query":""}`))
	if got := mustJSON(t, ans.Items); !strings.Contains(got, "the query is empty") {
		t.Fatalf("bad query: %s", got)
	}
}

// TestSearchQueries: both search answers take queries, one per need, and
// load one merged list.
func TestSearchQueries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ts := toolset(t, demo.Snapshot(), openai.Config{})
	tests := []struct {
		name, args string
		loaded     []string
		text       string // in the answer
	}{
		{name: "named first, then the best of the words", args: `{"queries":["scale kubernetes deployment","select:teamchat__postMessage"],"max_results":2}`,
			loaded: []string{"teamchat__postMessage", "kube__scaleDeployment"}},
		{name: "query and queries", args: `{"query":"select:codehost__create_issue","queries":["select:teamchat__postMessage"]}`,
			loaded: []string{"codehost__create_issue", "teamchat__postMessage"}},
		{name: "a bad query is named", args: `{"query":"scale","queries":["ok","  "]}`, text: "queries[1]: bad query: the query is empty"},
		{name: "nothing matched", args: `{"queries":["+zzzqqq","+qqqzzz"]}`, text: `No deferred tool matched \"+zzzqqq\" or \"+qqqzzz\".`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ans, err := ts.AnswerToolSearch(ctx, "call_1", json.RawMessage(tc.args))
			if err != nil {
				t.Fatal(err)
			}
			chat, err := ts.AnswerChatSearch(ctx, "call_2", tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ans.Loaded, tc.loaded) || !slices.Equal(chat.Loaded, tc.loaded) {
				t.Errorf("loaded %q and %q, want %q", ans.Loaded, chat.Loaded, tc.loaded)
			}
			if got, gotChat := mustJSON(t, ans.Items), mustJSON(t, chat.Message); !strings.Contains(got, tc.text) || !strings.Contains(gotChat, tc.text) {
				t.Errorf("answers lack %q:\n%s\n%s", tc.text, got, gotChat)
			}
		})
	}
}

func TestNamespaces(t *testing.T) {
	t.Parallel()
	ts := toolset(t, demo.Snapshot(), openai.Config{})
	count := map[string]int{}
	for _, n := range ts.Namespaces() {
		if len(n.Tools) == 0 || len(n.Tools) > 9 {
			t.Errorf("namespace %s has %d tools", n.Name, len(n.Tools))
		}
		for _, tl := range n.Tools {
			count[tl.ID()]++
			got, fn, ok := ts.NamespaceOf(tl)
			if !ok || got != n {
				t.Errorf("NamespaceOf(%s) = %v", tl.ID(), got)
			}
			if back, ok := ts.Route(n.Name, fn); !ok || back != tl {
				t.Errorf("Route(%s, %s) = %v", n.Name, fn, back)
			}
		}
	}
	if len(count) != len(demo.Snapshot().Tools()) {
		t.Fatalf("%d tools in namespaces, %d in the catalog", len(count), len(demo.Snapshot().Tools()))
	}
	for id, c := range count {
		if c != 1 {
			t.Errorf("%s in %d namespaces", id, c)
		}
	}
	// An old split's namespace still routes by server.
	if tl, ok := ts.Route("codehost__old_group", "create_issue"); !ok || tl.ID() != "codehost/create_issue" {
		t.Fatalf("old namespace: %v %v", tl, ok)
	}
	if _, ok := ts.Route("nope", "x"); ok {
		t.Fatal("unknown namespace routed")
	}
	if tl, ok := ts.Route("", "codehost__create_issue"); !ok || tl.ID() != "codehost/create_issue" {
		t.Fatal("plain function name did not route")
	}
}

func TestNamespacesSharedCatalog(t *testing.T) {
	t.Parallel()
	snap := sharedCatalog(t)
	ts := toolset(t, snap, openai.Config{})
	sizes := map[int]int{}
	names := map[string]bool{}
	for _, n := range ts.Namespaces() {
		sizes[len(n.Tools)]++
		if names[n.Name] || !validName(n.Name) {
			t.Errorf("namespace name %q repeated or invalid", n.Name)
		}
		names[n.Name] = true
		if len(n.Tools) > 9 {
			t.Errorf("%s: %d tools", n.Name, len(n.Tools))
		}
	}
	var lines []string
	for _, n := range ts.Namespaces() {
		if n.Server == "github" || n.Server == "linear" {
			var fns []string
			for _, tl := range n.Tools {
				fns = append(fns, tl.Name)
			}
			lines = append(lines, fmt.Sprintf("  %s: %s", n.Name, strings.Join(fns, ", ")))
		}
	}
	t.Logf("%d namespaces for %d tools of %d servers; sizes %v\n%s", len(ts.Namespaces()), len(snap.Tools()), len(snap.Servers()), sizes, strings.Join(lines, "\n"))
}

func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func TestResponsesAnnouncementsAndPrefix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := openaitest.New(t, openaitest.Options{})
	c := client(srv)
	full := demo.Snapshot()
	stages := []struct {
		from int
		ts   *openai.Toolset
	}{
		{0, toolset(t, without(t, full, "kube"), openai.Config{}, "kube")},
		{5, toolset(t, full, openai.Config{})},
		{10, toolset(t, without(t, full, "teamchat"), openai.Config{})},
		{15, toolset(t, full, openai.Config{})},
	}
	prompts := []string{"Create an issue on the code host about the login bug", "post a message to the team chat channel",
		"scale the web deployment on kubernetes", "create a calendar event for the review"}
	conv := &openai.Conversation{Instructions: "You are a helpful agent."}
	done, next := true, 0
	var announced []string
	for i := range 20 {
		ts := stages[0].ts
		for _, s := range stages {
			if i >= s.from {
				ts = s.ts
			}
		}
		if done {
			conv.Input = append(conv.Input, openai.UserMessage(prompts[next%len(prompts)]))
			next++
		}
		var turn *openai.Turn
		turn, _, done = respStep(ctx, t, ts, c, conv)
		if !turn.Announcement.Empty() {
			announced = append(announced, fmt.Sprintf("request %d:\n%s", i+1, turn.Announcement.Text()))
		}
	}
	if rej := srv.Rejections(); len(rej) > 0 {
		t.Fatalf("refused: %q", rej)
	}
	if len(announced) != 4 {
		t.Fatalf("%d announcements, want 4 (start, kube connected, teamchat gone, teamchat back):\n%s", len(announced), strings.Join(announced, "\n"))
	}
	bodies := srv.Requests()
	total := 0
	for i := 1; i < len(bodies); i++ {
		total += changedPrefix(t, bodies[i-1], bodies[i])
	}
	t.Logf("Responses, 20 requests, 3 catalog changes: %d prefix bytes changed", total)
	if total != 0 {
		t.Fatalf("%d prefix bytes changed, want 0", total)
	}
}

// changedPrefix counts the bytes of prev's instructions, tools and input
// that next does not repeat at the same place.
func changedPrefix(t testing.TB, prev, next []byte) int {
	t.Helper()
	type body struct {
		Instructions json.RawMessage   `json:"instructions"`
		Tools        []json.RawMessage `json:"tools"`
		Input        []json.RawMessage `json:"input"`
		Messages     []json.RawMessage `json:"messages"`
	}
	var p, n body
	if err := json.Unmarshal(prev, &p); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(next, &n); err != nil {
		t.Fatal(err)
	}
	changed := 0
	list := func(a, b []json.RawMessage) {
		for i := range a {
			if i >= len(b) || string(a[i]) != string(b[i]) {
				for _, e := range a[i:] {
					changed += len(e)
				}
				return
			}
		}
	}
	if string(p.Instructions) != string(n.Instructions) {
		changed += len(p.Instructions)
	}
	list(p.Tools, n.Tools)
	list(p.Input, n.Input)
	list(p.Messages, n.Messages)
	return changed
}

func TestResponsesCompact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := openaitest.New(t, openaitest.Options{})
	c := client(srv)
	ts := toolset(t, demo.Snapshot(), openai.Config{})
	conv := &openai.Conversation{}
	respRun(ctx, t, ts, c, conv, "Create an issue on the code host about the login bug")
	respRun(ctx, t, ts, c, conv, "scale the web deployment on kubernetes")
	raws := func() []json.RawMessage {
		var out []json.RawMessage
		for _, it := range conv.Input {
			out = append(out, json.RawMessage(mustJSON(t, it)))
		}
		return out
	}
	before := discovery.Loaded(ts.ReadResponses(raws())).Names()
	carry, err := ts.Compact(conv, len(conv.Input)-1, "Summary: an issue was created and a deployment scaled.")
	if err != nil {
		t.Fatal(err)
	}
	after := ts.ReadResponses(raws())
	if got := discovery.Loaded(after).Names(); !slices.Equal(got, before) || !slices.Equal(carry.Names, before) || after[0].Kind != discovery.Carried {
		t.Fatalf("before %q, carried %q, after %q", before, carry.Names, got)
	}
	turns, text := respRun(ctx, t, ts, c, conv, "Create an issue on the code host about the logout bug")
	if rej := srv.Rejections(); len(rej) > 0 {
		t.Fatalf("refused: %q", rej)
	}
	if len(turns) != 2 || !strings.Contains(text, "codehost/create_issue") {
		t.Fatalf("%d turns after compaction, ended with %q", len(turns), text)
	}
}

// chatStep sends one Chat Completions turn and answers its tool calls.
func chatStep(ctx context.Context, t testing.TB, ts *openai.Toolset, c oai.Client, conv *openai.ChatConversation) (*openai.ChatTurn, string, bool) {
	t.Helper()
	turn, err := ts.ChatTurn(conv, oai.ChatCompletionNewParams{Model: "gpt-test"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Chat.Completions.New(ctx, turn.Params)
	if err != nil {
		t.Fatalf("request refused: %v", err)
	}
	msg := resp.Choices[0].Message
	conv.Messages = append(conv.Messages, msg.ToParam())
	if len(msg.ToolCalls) == 0 {
		return turn, msg.Content, true
	}
	for _, call := range msg.ToolCalls {
		if call.Function.Name == ts.SearchToolName() {
			ans, err := ts.AnswerChatSearch(ctx, call.ID, call.Function.Arguments)
			if err != nil {
				t.Fatal(err)
			}
			conv.Messages = append(conv.Messages, ans.Message)
			continue
		}
		out := "no such tool: " + call.Function.Name
		if tool, ok := ts.Route("", call.Function.Name); ok {
			out = "ok: ran " + tool.ID()
		}
		conv.Messages = append(conv.Messages, oai.ToolMessage(out, call.ID))
	}
	return turn, "", false
}

func chatRun(ctx context.Context, t testing.TB, ts *openai.Toolset, c oai.Client, conv *openai.ChatConversation, task string) ([]*openai.ChatTurn, string) {
	t.Helper()
	conv.Messages = append(conv.Messages, oai.UserMessage(task))
	var turns []*openai.ChatTurn
	for range 8 {
		turn, text, done := chatStep(ctx, t, ts, c, conv)
		turns = append(turns, turn)
		if done {
			return turns, text
		}
	}
	t.Fatalf("task %q did not end", task)
	return nil, ""
}

func TestChatFallback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := openaitest.New(t, openaitest.Options{})
	c := client(srv)
	ts := toolset(t, demo.Snapshot(), openai.Config{NoToolSearch: true})
	if !ts.ChatDecision().SearchOn || !ts.ChatDecision().Expand {
		t.Fatalf("chat decision: %s", ts.ChatDecision().Why())
	}
	conv := &openai.ChatConversation{Messages: []oai.ChatCompletionMessageParamUnion{oai.SystemMessage("You are a helpful agent.")}}
	turns, text := chatRun(ctx, t, ts, c, conv, "Create an issue on the code host about the login bug")
	if rej := srv.Rejections(); len(rej) > 0 {
		t.Fatalf("refused: %q", rej)
	}
	if !strings.Contains(text, "codehost/create_issue") {
		t.Fatalf("ended with %q", text)
	}
	if turns[0].ToolsSent != 2 || turns[1].ToolsSent <= 2 {
		t.Fatalf("tools sent: %d then %d", turns[0].ToolsSent, turns[1].ToolsSent)
	}
	second := mustJSON(t, turns[1].Params.Tools)
	if !strings.Contains(second, `"name":"codehost__create_issue"`) || strings.Contains(second, "defer_loading") {
		t.Fatalf("discovered tool not sent as a plain function: %s", second)
	}
	// Prefix: the tools array and messages only grow.
	bodies := srv.Requests()
	for i := 1; i < len(bodies); i++ {
		if ch := changedPrefix(t, bodies[i-1], bodies[i]); ch != 0 {
			t.Fatalf("request %d changed %d prefix bytes", i+1, ch)
		}
	}
	// A discovered tool whose server left keeps its definition.
	gone := toolset(t, without(t, demo.Snapshot(), "codehost"), openai.Config{})
	turns, _ = chatRun(ctx, t, gone, c, conv, "post a message to the team chat channel")
	if !strings.Contains(mustJSON(t, turns[0].Params.Tools), `"name":"codehost__create_issue"`) {
		t.Fatal("the definition of a tool that left was dropped")
	}
	if a := turns[0].Announcement.Text(); !strings.Contains(a, "removed:\ncodehost__") {
		t.Fatalf("announcement:\n%s", a)
	}
	// Compaction carries the loaded tools.
	h := func() []string {
		var raws []json.RawMessage
		for _, m := range conv.Messages {
			raws = append(raws, json.RawMessage(mustJSON(t, m)))
		}
		return discovery.Loaded(openai.ReadChat(raws, ts.SearchToolName()).Events).Names()
	}
	before := h()
	if _, err := ts.ChatCompact(conv, len(conv.Messages)-1, "Summary."); err != nil {
		t.Fatal(err)
	}
	if after := h(); !slices.Equal(after, before) {
		t.Fatalf("before %q, after %q", before, after)
	}
	turns, text = chatRun(ctx, t, ts, c, conv, "Create an issue on the code host about the logout bug")
	if len(turns) != 2 || !strings.Contains(text, "codehost/create_issue") {
		t.Fatalf("after compaction: %d turns, %q", len(turns), text)
	}
}
