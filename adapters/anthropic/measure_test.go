package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/toolsearch/toolsearch/adapters/anthropic"
	"github.com/toolsearch/toolsearch/adapters/anthropic/anthropictest"
	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/deferral"
	"github.com/toolsearch/toolsearch/core/discovery"
	"github.com/toolsearch/toolsearch/core/search"
	"github.com/toolsearch/toolsearch/internal/sharedtest"
)

// stage is the catalog from request From (0-based) on.
type stage struct {
	From       int
	Snap       *catalog.Snapshot
	Connecting []string
	Note       string
}

// sessionResult is what a scripted session measured per request.
type sessionResult struct {
	Turns   []*anthropic.Turn
	Bodies  [][]byte
	Changed []int // bytes of the previous request not repeated at the same place
	Input   []int64
	Cached  []int64
}

// indexes caches one index per snapshot across tests.
var indexes sync.Map // *catalog.Snapshot → *search.Index

func indexOf(s *catalog.Snapshot) *search.Index {
	if ix, ok := indexes.Load(s); ok {
		return ix.(*search.Index)
	}
	ix := search.Build(s)
	indexes.Store(s, ix)
	return ix
}

// session runs n requests: prompts in turn (the next one when the model
// ends its turn), the catalog following stages.
func session(t testing.TB, stages []stage, cfg anthropic.Config, prompts []string, n int) sessionResult {
	t.Helper()
	ctx := context.Background()
	srv := anthropictest.New(t, anthropictest.Options{})
	c := client(srv)
	conv := &anthropic.Conversation{System: []sdk.TextBlockParam{{Text: "You are a helpful agent."}}}
	var res sessionResult
	var ts *anthropic.Toolset
	cur := -1
	next, done := 0, true
	for i := range n {
		for s := len(stages) - 1; s >= 0; s-- {
			if i >= stages[s].From {
				if s != cur {
					var err error
					ts, err = anthropic.NewToolset(anthropic.Source{Snapshot: stages[s].Snap, Index: indexOf(stages[s].Snap), Connecting: stages[s].Connecting}, cfg)
					if err != nil {
						t.Fatal(err)
					}
					cur = s
				}
				break
			}
		}
		if done {
			conv.Messages = append(conv.Messages, sdk.NewUserMessage(sdk.NewTextBlock(prompts[next%len(prompts)])))
			next++
		}
		var turn *anthropic.Turn
		var msg *sdk.Message
		turn, msg, done = step(ctx, t, ts, c, conv)
		res.Turns = append(res.Turns, turn)
		res.Input = append(res.Input, msg.Usage.InputTokens)
		res.Cached = append(res.Cached, msg.Usage.CacheReadInputTokens)
	}
	if rej := srv.Rejections(); len(rej) > 0 {
		t.Fatalf("the stand-in refused: %q", rej)
	}
	res.Bodies = srv.Requests()
	res.Changed = make([]int, len(res.Bodies))
	for i := 1; i < len(res.Bodies); i++ {
		res.Changed[i] = changedPrefix(t, res.Bodies[i-1], res.Bodies[i])
	}
	return res
}

// sections splits a request body into what prompt caching keys on, in
// order: the tools array, the system prompt, the messages.
func sections(t testing.TB, body []byte) (tools []json.RawMessage, system json.RawMessage, messages []json.RawMessage) {
	t.Helper()
	var top struct {
		Tools    []json.RawMessage `json:"tools"`
		System   json.RawMessage   `json:"system"`
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatal(err)
	}
	return top.Tools, top.System, top.Messages
}

// changedPrefix counts the bytes of the previous request's tools array,
// system prompt and messages that the next request does not repeat at the
// same place: 0 when each section of prev is a prefix of the same section
// of next (the tools array and the messages may only grow at their end).
func changedPrefix(t testing.TB, prev, next []byte) int {
	pt, ps, pm := sections(t, prev)
	nt, ns, nm := sections(t, next)
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
	list(pt, nt)
	if string(ps) != string(ns) {
		changed += len(ps)
	}
	list(pm, nm)
	return changed
}

// demoStages: kube connecting, then connected (request 5), teamchat
// disconnects (request 10) and reconnects (request 15).
func demoStages(t testing.TB) []stage {
	full := demoSnap()
	return []stage{
		{From: 0, Snap: without(t, full, "kube"), Connecting: []string{"kube"}, Note: "kube still connecting"},
		{From: 5, Snap: full, Note: "kube connected: 11 tools added"},
		{From: 10, Snap: without(t, full, "teamchat"), Note: "teamchat disconnected: 9 tools removed"},
		{From: 15, Snap: full, Note: "teamchat reconnected: 9 tools re-added"},
	}
}

var demoPrompts = []string{
	"Create an issue on the code host about the login bug",
	"post a message to the team chat channel",
	"scale the web deployment on kubernetes",
	"Create an issue on the code host about the logout bug",
	"create a calendar event for the review",
}

// TestDeltaKeepsPrefix is the cache test of the issue: a scripted 20-request
// session with three catalog changes. With delta announcements every byte
// of each request's tools array, system prompt and messages is repeated,
// at the same place, by the next request.
func TestDeltaKeepsPrefix(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		cfg       anthropic.Config
		wantZero  bool
		wantTotal func(int) bool
	}{
		{name: "client search, delta", cfg: anthropic.Config{}, wantZero: true},
		{name: "inline, delta", cfg: anthropic.Config{Strategy: anthropic.Inline}, wantZero: true},
		{name: "reference-add, delta", cfg: anthropic.Config{Strategy: anthropic.ReferenceAdd}, wantZero: true},
		{name: "classic, delta", cfg: anthropic.Config{Strategy: anthropic.Classic}, wantZero: true},
		{name: "client search, delta, mcp__ prefix", cfg: anthropic.Config{Prefix: "mcp__"}, wantZero: true},
		{name: "expand, delta", cfg: anthropic.Config{Wire: anthropic.Expand}, wantZero: true},
		{name: "client search, snapshot", cfg: anthropic.Config{Announce: discovery.Snapshot}},
		{name: "server bm25, delta", cfg: anthropic.Config{Search: anthropic.ServerBM25}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := session(t, demoStages(t), tt.cfg, demoPrompts, 20)
			total := 0
			for i, c := range res.Changed {
				total += c
				t.Logf("request %2d: %2d tools sent (%2d visible, %2d deferred), %5d prefix bytes changed, input %5d tokens (%5d cached)",
					i+1, res.Turns[i].ToolsSent, res.Turns[i].ToolsVisible, res.Turns[i].ToolsDeferred, c, res.Input[i], res.Cached[i])
			}
			t.Logf("%s: %d prefix bytes changed over 20 requests", tt.name, total)
			// Under the strategies that add tools in system messages, what
			// the model read is always the beginning of what it reads next.
			if s := tt.cfg.Strategy; s == anthropic.Inline || s == anthropic.ReferenceAdd {
				for i := 1; i < len(res.Bodies); i++ {
					prev, next := rendered(t, res.Bodies[i-1]), rendered(t, res.Bodies[i])
					if lost := len(prev) - commonPrefixLen(prev, next); lost != 0 {
						t.Fatalf("request %d: %d bytes of what the model read before are not its prefix", i+1, lost)
					}
				}
			}
			if tt.wantZero && total != 0 {
				t.Fatalf("%d prefix bytes changed, want 0", total)
			}
			if !tt.wantZero && total == 0 {
				t.Fatalf("no prefix byte changed; this configuration was expected to rewrite some")
			}
		})
	}
}

// sharedCatalog loads the real catalog (or $TOOLSEARCH_CATALOG), or skips.
func sharedCatalog(t testing.TB) *catalog.Snapshot { return sharedtest.Catalog(t) }

// firstRequestTokens returns the o200k tokens of the whole first request
// body, and of what the model reads (the body without deferred tools).
func firstRequestTokens(t testing.TB, snap *catalog.Snapshot, cfg anthropic.Config, task string) (body, visible int, turn *anthropic.Turn) {
	t.Helper()
	ts, err := anthropic.NewToolset(anthropic.Source{Snapshot: snap, Index: indexOf(snap)}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	conv := &anthropic.Conversation{System: []sdk.TextBlockParam{{Text: "You are a helpful agent."}}}
	conv.Messages = append(conv.Messages, sdk.NewUserMessage(sdk.NewTextBlock(task)))
	turn, err = ts.Turn(conv, sdk.MessageNewParams{Model: "claude-test", MaxTokens: 1024})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(turn.Params)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	var tools []json.RawMessage
	_ = json.Unmarshal(top["tools"], &tools)
	var kept []json.RawMessage
	for _, tl := range tools {
		var v struct {
			DeferLoading bool `json:"defer_loading"`
		}
		_ = json.Unmarshal(tl, &v)
		if !v.DeferLoading {
			kept = append(kept, tl)
		}
	}
	top["tools"], _ = json.Marshal(kept)
	vb, _ := json.Marshal(top)
	return catalog.CountTokens(string(b)), catalog.CountTokens(string(vb)), turn
}

// TestSharedCatalogTargets measures the targets on the 113-server
// catalog. Run with -v to read the figures:
//
//	go test ./adapters/anthropic -run TestSharedCatalogTargets -v
func TestSharedCatalogTargets(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("the measurement on the shared catalog runs without -race and -short")
	}
	snap := sharedCatalog(t)
	task := "create a pull request on github"
	offBody, _, offTurn := firstRequestTokens(t, snap, anthropic.Config{Mode: deferral.Mode{Kind: deferral.Off}}, task)
	onBody, _, onTurn := firstRequestTokens(t, snap, anthropic.Config{}, task)
	srvBody, srvVisible, srvTurn := firstRequestTokens(t, snap, anthropic.Config{Search: anthropic.ServerBM25}, task)
	t.Logf("catalog: %d servers, %d tools", len(snap.Servers()), len(snap.Tools()))
	t.Logf("first request, search off:           %7d o200k tokens (~%d Claude), %d tool definitions", offBody, catalog.ClaudeTokens(offBody), offTurn.ToolsSent)
	t.Logf("first request, client search, delta: %7d o200k tokens (~%d Claude), %d tool definitions: %.2f%% fewer tokens",
		onBody, catalog.ClaudeTokens(onBody), onTurn.ToolsSent, 100*(1-float64(onBody)/float64(offBody)))
	t.Logf("first request, server bm25:          %7d o200k tokens in the body, %d read by the model (%d definitions sent, %d visible): %.2f%% fewer tokens read",
		srvBody, srvVisible, srvTurn.ToolsSent, srvTurn.ToolsVisible, 100*(1-float64(srvVisible)/float64(offBody)))
	if r := float64(onBody) / float64(offBody); r >= 0.01 {
		t.Errorf("client search cuts the first request by %.2f%%, want more than 99%%", 100*(1-r))
	}
	t.Logf("announcement: %d bytes; search tool description: %d bytes",
		len(onTurn.Announcement.Text()), len(mustJSON(t, onTurn.Params.Tools[len(onTurn.Params.Tools)-1])))

	// The scripted session on the real catalog: sentry connecting, then
	// connected; slack disconnects and reconnects.
	full := snap
	stages := []stage{
		{From: 0, Snap: without(t, full, "sentry"), Connecting: []string{"sentry"}, Note: "sentry connecting"},
		{From: 5, Snap: full, Note: "sentry connected"},
		{From: 10, Snap: without(t, full, "slack"), Note: "slack disconnected"},
		{From: 15, Snap: full, Note: "slack reconnected"},
	}
	prompts := []string{
		"create a pull request on github",
		"post a message to a slack channel",
		"list the pods in the kubernetes cluster",
		"find the latest unresolved sentry issues",
		"create a pull request on github for the fix",
	}
	for _, cfg := range []struct {
		name string
		cfg  anthropic.Config
	}{
		{"client search, delta", anthropic.Config{}},
		{"client search, snapshot", anthropic.Config{Announce: discovery.Snapshot}},
		{"server bm25, delta", anthropic.Config{Search: anthropic.ServerBM25}},
	} {
		res := session(t, stages, cfg.cfg, prompts, 20)
		total := 0
		var lines []string
		for i, c := range res.Changed {
			total += c
			lines = append(lines, fmt.Sprintf("  %2d: %4d sent, %2d visible, %4d deferred; %6d prefix bytes changed; %6d input tokens, %6d cached",
				i+1, res.Turns[i].ToolsSent, res.Turns[i].ToolsVisible, res.Turns[i].ToolsDeferred, c, res.Input[i], res.Cached[i]))
		}
		t.Logf("session %s: %d prefix bytes changed over 20 requests with 3 catalog changes\n%s", cfg.name, total, strings.Join(lines, "\n"))
		if cfg.name == "client search, delta" && total != 0 {
			t.Errorf("delta changed %d prefix bytes, want 0", total)
		}
	}
}

// strategyFigures is one row of the strategy table.
type strategyFigures struct {
	name          string
	firstTokens   int // o200k tokens of the first request body
	firstVisible  int // of what the model reads (deferred tools left out)
	prefixChanged int // bytes of earlier requests not repeated, over the session
	renderedLost  int // bytes of what the model read that the next request did not begin with
	totalBytes    int // request bytes over the session
	uncached      int64
}

// TestStrategyFigures measures the strategies on the shared catalog (113
// servers, 3,601 tools): a scripted 20-request session with 3 catalog
// changes (sentry connects, slack leaves and comes back). It prints the
// table of docs/library.md; run it with
//
//	go test ./adapters/anthropic -run TestStrategyFigures -v
//
// It takes about two minutes on a small machine (reference-add and the
// server search send the whole catalog with every request), so it runs
// only with TOOLSEARCH_FIGURES=1.
func TestStrategyFigures(t *testing.T) {
	if raceEnabled || testing.Short() || os.Getenv("TOOLSEARCH_FIGURES") == "" {
		t.Skip("the strategy figures on the shared catalog run with TOOLSEARCH_FIGURES=1, without -race and -short")
	}
	full := sharedCatalog(t)
	stages := []stage{
		{From: 0, Snap: without(t, full, "sentry"), Connecting: []string{"sentry"}, Note: "sentry connecting"},
		{From: 5, Snap: full, Note: "sentry connected"},
		{From: 10, Snap: without(t, full, "slack"), Note: "slack disconnected"},
		{From: 15, Snap: full, Note: "slack reconnected"},
	}
	prompts := []string{
		"create a pull request on github",
		"post a message to a slack channel",
		"list the pods in the kubernetes cluster",
		"find the latest unresolved sentry issues",
		"create a pull request on github for the fix",
	}
	rows := []struct {
		name     string
		cfg      anthropic.Config
		zero     bool // the goal: no prefix byte changed
		wantOnly anthropic.Strategy
	}{
		{"inline", anthropic.Config{Strategy: anthropic.Inline}, true, anthropic.Inline},
		{"reference-add", anthropic.Config{Strategy: anthropic.ReferenceAdd}, true, anthropic.ReferenceAdd},
		{"classic (client search)", anthropic.Config{Strategy: anthropic.Classic}, true, anthropic.Classic},
		{"classic (server bm25)", anthropic.Config{Search: anthropic.ServerBM25}, false, anthropic.Classic},
		{"plain", anthropic.Config{Strategy: anthropic.Plain}, true, anthropic.Plain},
	}
	var figs []strategyFigures
	for _, row := range rows {
		res := session(t, stages, row.cfg, prompts, 20)
		f := strategyFigures{name: row.name}
		f.firstTokens = catalog.CountTokens(string(res.Bodies[0]))
		_, f.firstVisible, _ = firstRequestTokens(t, stages[0].Snap, row.cfg, prompts[0])
		for i, b := range res.Bodies {
			f.totalBytes += len(b)
			f.prefixChanged += res.Changed[i]
			f.uncached += res.Input[i]
			if i > 0 {
				prev, next := rendered(t, res.Bodies[i-1]), rendered(t, b)
				f.renderedLost += len(prev) - commonPrefixLen(prev, next)
			}
		}
		for _, turn := range res.Turns {
			if turn.Strategy != row.wantOnly {
				t.Errorf("%s: a turn ran as %s (%s)", row.name, turn.Strategy, turn.StrategyWhy)
			}
		}
		if row.zero && f.prefixChanged != 0 {
			t.Errorf("%s: %d prefix bytes changed, want 0", row.name, f.prefixChanged)
		}
		figs = append(figs, f)
	}
	var b strings.Builder
	b.WriteString("| strategy | first request, tokens (body) | first request, tokens the model reads | prefix bytes changed | read prefix bytes lost | request bytes, 20 requests | uncached input tokens, 20 requests |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, f := range figs {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d |\n", f.name, f.firstTokens, f.firstVisible, f.prefixChanged, f.renderedLost, f.totalBytes, f.uncached)
	}
	t.Logf("catalog: %d servers, %d tools\n%s", len(full.Servers()), len(full.Tools()), b.String())
	// Inline sends the least over the session; reference-add declares the
	// whole catalog in every request.
	if figs[0].totalBytes >= figs[1].totalBytes {
		t.Errorf("inline sent %d bytes, reference-add %d: want inline smaller", figs[0].totalBytes, figs[1].totalBytes)
	}
}

// rendered is what the model reads of a request, in the order prompt
// caching keys on it (as the stand-in computes it): the tools without
// defer_loading, the system prompt, the messages, each compacted.
func rendered(t testing.TB, body []byte) []byte {
	tools, system, msgs := sections(t, body)
	var b bytes.Buffer
	for _, tl := range tools {
		var v struct {
			DeferLoading bool `json:"defer_loading"`
		}
		_ = json.Unmarshal(tl, &v)
		if !v.DeferLoading {
			_ = json.Compact(&b, tl)
		}
	}
	if len(system) > 0 {
		_ = json.Compact(&b, system)
	}
	for _, m := range msgs {
		_ = json.Compact(&b, m)
	}
	return b.Bytes()
}

func commonPrefixLen(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
