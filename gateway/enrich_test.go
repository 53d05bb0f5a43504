package gateway

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/core/hints"
	"github.com/toolsearch/toolsearch/enrich/enrichtest"
	"github.com/toolsearch/toolsearch/gateway/config"
)

// sampler is an MCP client whose model answers sampling requests with
// hints for the tools in the prompt, recording each request.
type sampler struct {
	mu sync.Mutex
	//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
	requests []*mcp.CreateMessageParams
	tools    []string // every tool name seen in a prompt
}

//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
func (s *sampler) handle(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	p := req.Params
	text := ""
	if len(p.Messages) == 1 {
		if tc, ok := p.Messages[0].Content.(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	var names []string
	for _, l := range strings.Split(text, "\n") {
		var d struct{ Name string }
		if strings.HasPrefix(l, `{"name":`) && json.Unmarshal([]byte(l), &d) == nil {
			names = append(names, d.Name)
		}
	}
	s.mu.Lock()
	s.requests = append(s.requests, p)
	s.tools = append(s.tools, names...)
	s.mu.Unlock()
	reply := enrichtest.ReplyFor(names, func(n string) []any {
		return []any{"find " + n, "use the " + n + " tool", codeWord(n), "get " + n + " done"}
	})
	//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
	return &mcp.CreateMessageResult{Content: &mcp.TextContent{Text: reply}, Model: "client-model", Role: "assistant"}, nil
}

// codeWord is a word found in no definition, one per tool name.
func codeWord(name string) string {
	r := []rune(name)
	slices.Reverse(r)
	return "zq" + string(r)
}

//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
func (s *sampler) seen() ([]*mcp.CreateMessageParams, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests), slices.Clone(s.tools)
}

// startEnrichGateway starts a gateway on cfgPath with a short quiet time.
func startEnrichGateway(t *testing.T, cfgPath string) *Gateway {
	t.Helper()
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	level := slog.LevelError
	if testing.Verbose() {
		level = slog.LevelDebug
	}
	g, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))})
	if err != nil {
		t.Fatal(err)
	}
	g.enrichTiming.Quiet = 50 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	g.Start(ctx)
	t.Cleanup(func() { stopGateway(t, g, cancel) })
	return g
}

// TestSamplingEnrichment connects a real MCP client that offers sampling:
// the gateway asks it for the hints of the visible tools, writes them to
// the state directory and puts them on the catalog's tools.
func TestSamplingEnrichment(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	cfgPath := writeConfig(t, map[string]any{"echo": roleServer(t, "echo")}, map[string]any{
		"stateDir": state,
		"enrich":   map[string]any{"enabled": true, "provider": "sampling", "batch": 3, "model": "small-model"},
		"policy":   map[string]any{"deny": []string{"echo/delete_everything"}},
	})
	g := startEnrichGateway(t, cfgPath)
	waitState(t, g, "echo", 20*time.Second, StateReady)

	s := &sampler{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := g.Connect(ctx, "search", st); err != nil {
		t.Fatal(err)
	}
	//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
	cl := mcp.NewClient(&mcp.Implementation{Name: "sampling-client", Version: "1"}, &mcp.ClientOptions{CreateMessageHandler: s.handle})
	cs, err := cl.Connect(ctx, ct, legacySession)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeSession(t, cs) })

	hintsPath := filepath.Join(state, "hints.jsonl")
	waitFor(t, "hints on echo/echo", 20*time.Second, func() bool {
		tl, ok := g.Snapshot().Tool("echo/echo")
		return ok && len(tl.Hints) == 4
	})
	tl, _ := g.Snapshot().Tool("echo/echo")
	if !slices.Equal(tl.Hints, []string{"find echo", "use the echo tool", "zqohce", "get echo done"}) {
		t.Errorf("echo/echo hints %q", tl.Hints)
	}
	set, err := hints.LoadFile(hintsPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"echo/echo", "echo/slow", "echo/grow", "echo/deploy"} {
		e, ok := set.Get(id)
		tool, _ := g.Snapshot().Tool(id)
		if !ok || e.Digest != hints.Digest(tool) {
			t.Errorf("%s: entry %+v", id, e)
		}
	}
	if _, ok := set.Get("echo/delete_everything"); ok {
		t.Error("hints written for a tool policy hides")
	}
	reqs, tools := s.seen()
	if slices.Contains(tools, "delete_everything") {
		t.Error("a tool policy hides was sent to the client's model")
	}
	for _, r := range reqs {
		if r.SystemPrompt == "" || r.MaxTokens <= 0 || r.ModelPreferences == nil || len(r.ModelPreferences.Hints) != 1 ||
			r.ModelPreferences.Hints[0].Name != "small-model" {
			t.Errorf("sampling request %+v", r)
		}
	}
	// The running gateway's index searches the new hints: a word only a
	// hint has finds its tool.
	waitFor(t, "a search on a hint's word", 10*time.Second, func() bool {
		hits := (&client{cs: cs}).search(t, codeWord("deploy"))
		return len(hits) > 0 && strings.HasSuffix(hits[0], "deploy")
	})
}

// TestHintsFilesAtStart checks the files the gateway reads: the state
// directory's, then the configured one, whose entries win; a broken
// configured file stops the start, a broken state file does not.
func TestHintsFilesAtStart(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	write := func(path, text string) {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(state, "hints.jsonl"), `{"id":"echo/echo","hints":["from the state dir"]}`+"\n"+
		`{"id":"echo/slow","hints":["state slow"]}`+"\n"+
		`{"id":"echo/grow","hints":["stale"],"digest":"sha256:`+strings.Repeat("0", 64)+`"}`+"\n")
	user := filepath.Join(t.TempDir(), "mine.jsonl")
	write(user, `{"id":"echo/slow","hints":["mine wins"]}`+"\n")
	cfgPath := writeConfig(t, map[string]any{"echo": roleServer(t, "echo")}, map[string]any{"stateDir": state, "hints": user})
	g := startGateway(t, cfgPath)
	waitState(t, g, "echo", 20*time.Second, StateReady)
	want := map[string][]string{"echo/echo": {"from the state dir"}, "echo/slow": {"mine wins"}, "echo/grow": nil}
	for id, w := range want {
		tl, ok := g.Snapshot().Tool(id)
		if !ok || !slices.Equal(tl.Hints, w) {
			t.Errorf("%s: hints %q, want %q", id, tl.Hints, w)
		}
	}

	broken := filepath.Join(t.TempDir(), "broken.jsonl")
	write(broken, "{\"id\":\"echo/echo\",\"hints\":[\"\"]}\n")
	cfg, err := config.Load(writeConfig(t, map[string]any{"echo": roleServer(t, "echo")}, map[string]any{"hints": broken}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(cfg, Options{}); err == nil || !strings.Contains(err.Error(), "line 1 (echo/echo): hint 1: empty") {
		t.Errorf("New with a broken hints file = %v", err)
	}
	brokenState := t.TempDir()
	write(filepath.Join(brokenState, "hints.jsonl"), "not json\n")
	cfg, err = config.Load(writeConfig(t, map[string]any{"echo": roleServer(t, "echo")}, map[string]any{"stateDir": brokenState}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(cfg, Options{}); err != nil {
		t.Errorf("a broken state hints file stopped the start: %v", err)
	}
}

// TestEnrichOffByDefault checks that without toolsearch.enrich the client's
// model is never asked.
func TestEnrichOffByDefault(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	g := startEnrichGateway(t, writeConfig(t, map[string]any{"echo": roleServer(t, "echo")}, map[string]any{"stateDir": state}))
	waitState(t, g, "echo", 20*time.Second, StateReady)
	s := &sampler{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := g.Connect(ctx, "search", st); err != nil {
		t.Fatal(err)
	}
	//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{CreateMessageHandler: s.handle}).Connect(ctx, ct, legacySession)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeSession(t, cs) })
	time.Sleep(300 * time.Millisecond) // six times the quiet time the gateway was given
	if reqs, _ := s.seen(); len(reqs) > 0 {
		t.Errorf("%d sampling requests with enrichment off", len(reqs))
	}
	if _, err := os.Stat(filepath.Join(state, "hints.jsonl")); !os.IsNotExist(err) {
		t.Errorf("a hints file was written with enrichment off: %v", err)
	}
}

// TestSamplingNeedsTheCapability: with provider sampling, a client that
// did not declare the sampling capability is never asked; enrichment says
// it waits for one, and the first client that declares it is asked.
func TestSamplingNeedsTheCapability(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	g := startEnrichGateway(t, writeConfig(t, map[string]any{"echo": roleServer(t, "echo")}, map[string]any{
		"stateDir": state, "enrich": map[string]any{"enabled": true},
	}))
	waitState(t, g, "echo", 20*time.Second, StateReady)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A client without sampling: enrichment waits rather than ask it.
	ct, st := mcp.NewInMemoryTransports()
	if _, err := g.Connect(ctx, "search", st); err != nil {
		t.Fatal(err)
	}
	plain, err := mcp.NewClient(&mcp.Implementation{Name: "plain", Version: "1"}, nil).Connect(ctx, ct, legacySession)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeSession(t, plain) })
	waitFor(t, "enrichment waiting for a sampling client", 20*time.Second, func() bool {
		s := g.EnrichStatus()
		return s.State == EnrichWaiting && strings.Contains(s.Reason, "a client that offers MCP sampling")
	})
	if _, err := os.Stat(filepath.Join(state, "hints.jsonl")); !os.IsNotExist(err) {
		t.Errorf("hints were written without a client that offers sampling: %v", err)
	}
	s := &sampler{}
	ct2, st2 := mcp.NewInMemoryTransports()
	if _, err := g.Connect(ctx, "search", st2); err != nil {
		t.Fatal(err)
	}
	//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "sampler", Version: "1"}, &mcp.ClientOptions{CreateMessageHandler: s.handle}).Connect(ctx, ct2, legacySession)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeSession(t, cs) })
	waitFor(t, "hints through the sampling client", 20*time.Second, func() bool {
		st := g.EnrichStatus()
		return st.State == EnrichIdle && st.WithHints == st.Tools
	})
	if reqs, _ := s.seen(); len(reqs) == 0 {
		t.Error("the sampling client was never asked")
	}
}

// enrichFeed records the enrichment states a gateway tells its feed.
type enrichFeed struct {
	mu     sync.Mutex
	states []EnrichStatus
}

func (f *enrichFeed) Searched(SearchEvent)        {}
func (f *enrichFeed) Loaded(LoadEvent)            {}
func (f *enrichFeed) Called(CallEvent)            {}
func (f *enrichFeed) SessionChanged(SessionEvent) {}
func (f *enrichFeed) ServersChanged([]ServerView) {}
func (f *enrichFeed) EnrichChanged(st EnrichStatus) {
	f.mu.Lock()
	f.states = append(f.states, st)
	f.mu.Unlock()
}

func (f *enrichFeed) seen() []EnrichStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.states)
}

// TestEnrichFeed: a feed that shows enrichment (the dashboard) is told
// its progress: waiting, running with the tools done, then idle with
// every tool's hints, today's spend and outcomes.
func TestEnrichFeed(t *testing.T) {
	t.Parallel()
	stand := enrichtest.New(t, enrichtest.Anthropic, goodAnswers)
	path := enrichConfig(t, map[string]any{"echo": roleServer(t, "echo")}, stand, t.TempDir(), map[string]any{"batch": 2}, nil)
	f := &enrichFeed{}
	r := startEnrichRig(t, loadEnrichConfig(t, path, stand.APIKey), Options{Feed: f}, nil, false)
	r.waitEnrich(t, "the run's end", func(s EnrichStatus) bool { return s.State == EnrichIdle })
	waitFor(t, "the feed told of the end", 10*time.Second, func() bool {
		s := f.seen()
		return len(s) > 0 && s[len(s)-1].State == EnrichIdle
	})
	seen := f.seen()
	var order []string
	maxDone := 0
	for _, st := range seen {
		if len(order) == 0 || order[len(order)-1] != st.State {
			order = append(order, st.State)
		}
		if st.Progress != nil {
			maxDone = max(maxDone, st.Progress.Done)
		}
	}
	if i, j := slices.Index(order, EnrichRunning), slices.Index(order, EnrichIdle); i < 0 || j < i {
		t.Errorf("states told %v: want running, then idle", order)
	}
	last := seen[len(seen)-1]
	if last.WithHints != last.Tools || last.Today.Written != int64(last.Tools) || last.Spent.Tools != int64(last.Tools) || maxDone != last.Tools {
		t.Errorf("the last state told %+v (most done %d)", last, maxDone)
	}
}
