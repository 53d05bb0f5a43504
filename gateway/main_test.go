package gateway

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/config"
)

// The test binary doubles as every helper server the tests need: run with
// TOOLSEARCH_TEST_ROLE set, it becomes that server instead of running tests.
const roleEnv = "TOOLSEARCH_TEST_ROLE"

// packageDeadline is the backstop for a hang the per-wait bounds missed:
// the whole package takes about 3 minutes under -race on 2 cores, and
// twice that on a loaded machine, so after this the test binary prints
// every goroutine and fails, before go test's own 10-minute timeout.
const packageDeadline = 8 * time.Minute

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(runRole(role))
	}
	flag.Parse()
	deadline := packageDeadline
	if c, ok := flag.Lookup("test.count").Value.(flag.Getter).Get().(uint); ok && c > 1 {
		deadline *= time.Duration(c)
	}
	if b := flag.Lookup("test.bench"); b != nil && b.Value.String() != "" {
		deadline = 0 // benchmarks take as long as they are told to
	}
	if z := flag.Lookup("test.fuzz"); z != nil && z.Value.String() != "" {
		deadline = 0 // so does fuzzing (-fuzztime), in its workers too
	}
	if t := flag.Lookup("test.timeout"); t != nil {
		if d, ok := t.Value.(flag.Getter).Get().(time.Duration); ok && d > 0 && d <= deadline {
			deadline = 0 // go test's own timeout comes first
		}
	}
	watchdog := time.AfterFunc(max(deadline, time.Nanosecond), func() {
		if deadline == 0 {
			return
		}
		fmt.Fprintf(os.Stderr, "gateway tests: still running after %v, which means something hangs; "+
			"the goroutines in gateway.Test… frames show which tests; every goroutine:\n%s\n", deadline, allStacks())
		os.Exit(2)
	})
	code := m.Run()
	watchdog.Stop()
	os.Exit(code)
}

// allStacks returns the stacks of every goroutine.
func allStacks() string {
	buf := make([]byte, 4<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// bounded runs f and waits for it at most d. If f is still running then,
// the test fails with what was waited for and every goroutine's stack, and
// bounded returns, leaving f behind: a wait that hangs becomes a clear
// failure within seconds.
func bounded(t testing.TB, what string, d time.Duration, f func()) bool {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
		return true
	case <-time.After(d):
		t.Errorf("%s did not finish within %v; goroutines:\n%s", what, d, allStacks())
		return false
	}
}

// serveHTTP starts an HTTP test server and closes it at the end of the
// test, within bounds: httptest's Close waits for every request in
// progress, a client's open event stream included.
func serveHTTP(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		if !bounded(t, "closing the HTTP test server", 15*time.Second, srv.Close) {
			srv.CloseClientConnections()
		}
	})
	return srv
}

func runRole(role string) int {
	ctx := context.Background()
	switch role {
	case "echo":
		return serveEcho(ctx, false)
	case "leaky":
		// A server that echoes its credential into a tool's description,
		// and a key shaped like a provider's into its schema.
		s := mcp.NewServer(&mcp.Implementation{Name: "leaky", Version: "1"}, nil)
		s.AddTool(&mcp.Tool{Name: "lookup", Description: "Look up a record. Authenticated as " + os.Getenv("LEAKY_TOKEN") + ".",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"key":{"type":"string","default":"sk-ant-api03-` + strings.Repeat("Q7", 40) + `"}}}`)},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found"}}}, nil
			})
		if err := s.Run(ctx, &mcp.StdioTransport{}); err != nil {
			return 1
		}
		return 0
	case "garbage":
		// A chatty server: a banner and stray prints on stdout, then a
		// working server.
		fmt.Println("Welcome to the garbage server v1.0!")
		fmt.Println("loading plugins... done")
		return serveEcho(ctx, true)
	case "garbage-only":
		for i := 0; ; i++ {
			fmt.Printf("this is not JSON-RPC, line %d\n", i)
			time.Sleep(50 * time.Millisecond)
		}
	case "hang":
		fmt.Fprintln(os.Stderr, "hang: reading stdin and never answering")
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 0
	case "exit":
		fmt.Fprintln(os.Stderr, "fatal: API_TOKEN is not set")
		return 3
	case "raw":
		return serveRawStdio()
	case "slow-start":
		// An echo server that comes up when the test says so (it reads
		// nothing meanwhile, so initialize waits).
		awaitGate()
		return serveEcho(ctx, false)
	case "flaky":
		// Fails its first starts (counted in a file), then works.
		path := os.Getenv("TOOLSEARCH_TEST_COUNTER")
		b, _ := os.ReadFile(path)
		n, _ := strconv.Atoi(string(b))
		_ = os.WriteFile(path, []byte(strconv.Itoa(n+1)), 0o644)
		if fails, _ := strconv.Atoi(os.Getenv("TOOLSEARCH_TEST_FAILS")); n < fails {
			fmt.Fprintf(os.Stderr, "flaky: start %d fails\n", n+1)
			return 3
		}
		return serveEcho(ctx, false)
	case "many":
		// A server of many tools that comes up when the test says so.
		awaitGate()
		return serveMany(ctx, 100)
	case "gateway-stdio":
		return runGatewayStdio(ctx)
	case "forwarder":
		return serveForwarder(ctx)
	case "declares-resources":
		return serveDeclaresResources(ctx)
	case "modern":
		return serveModern(ctx)
	case "modern-slow-listen":
		return serveModernSlowListen(ctx)
	case "deaf-to-discover":
		return serveDeafToDiscover()
	}
	fmt.Fprintf(os.Stderr, "unknown role %q\n", role)
	return 2
}

type echoArgs struct {
	Text string `json:"text" jsonschema:"the text to echo back"`
}

type slowArgs struct {
	Millis int `json:"millis" jsonschema:"how long to work, in milliseconds"`
}

type growArgs struct {
	Name string `json:"name" jsonschema:"name of the tool to add"`
}

// serveEcho is a small Go SDK server: echo, add, slow (progress, honours
// cancellation), crash (dies mid-call), grow (adds a tool at run time, so
// the server sends tools/list_changed), a resource and a prompt.
func serveEcho(ctx context.Context, chatty bool) int {
	s := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back unchanged."},
		func(ctx context.Context, req *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
			if chatty {
				fmt.Fprintln(os.Stderr, "echo called")
			}
			//lint:ignore SA1019 log messages are forwarded for 2025-11-25 clients and servers, which still send them
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "echo: " + a.Text})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Work for a while, reporting progress."},
		func(ctx context.Context, req *mcp.CallToolRequest, a slowArgs) (*mcp.CallToolResult, any, error) {
			tok := req.Params.GetProgressToken()
			for i := 1; i <= 4; i++ {
				select {
				case <-ctx.Done():
					fmt.Fprintln(os.Stderr, "slow: cancelled")
					return nil, nil, ctx.Err()
				case <-time.After(time.Duration(a.Millis/4) * time.Millisecond):
				}
				if tok != nil {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 4, Message: "step " + strconv.Itoa(i)})
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Die in the middle of the call."},
		func(ctx context.Context, req *mcp.CallToolRequest, a struct{}) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "crash: dying mid-call")
			time.Sleep(100 * time.Millisecond)
			os.Exit(7)
			return nil, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "grow", Description: "Add a new tool to this server at run time."},
		func(ctx context.Context, req *mcp.CallToolRequest, a growArgs) (*mcp.CallToolResult, any, error) {
			name := a.Name
			s.AddTool(&mcp.Tool{Name: name, Description: "A tool added at run time: " + name + " frobnicates widgets.",
				InputSchema: json.RawMessage(`{"type":"object","properties":{"widget":{"type":"string"}}}`)},
				func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "frobnicated"}}}, nil
				})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "added " + name}}}, nil, nil
		})
	s.AddTool(&mcp.Tool{Name: "delete_everything", Description: "Delete every record. Dangerous.",
		InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "DELETED"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "deploy", Description: "Deploy to production.",
		InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deployed"}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "echo://readme", Name: "readme", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "echo readme"}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who"}}},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello " + req.Params.Arguments["who"]}}}}, nil
		})
	if err := s.Run(ctx, &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		return 1
	}
	return 0
}

// gateEnv names the file whose creation lets a gated role start serving.
const gateEnv = "TOOLSEARCH_TEST_GATE"

// awaitGate waits until the gate file exists (at most a minute).
func awaitGate() {
	path := os.Getenv(gateEnv)
	for deadline := time.Now().Add(time.Minute); path != "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
}

// gatedServer is a config entry for a role that starts serving only once
// the returned function is called.
func gatedServer(t testing.TB, role string) (map[string]any, func()) {
	t.Helper()
	s := roleServer(t, role)
	gate := filepath.Join(t.TempDir(), "gate")
	s["env"].(map[string]string)[gateEnv] = gate
	return s, func() {
		if err := os.WriteFile(gate, nil, 0o644); err != nil {
			t.Error(err)
		}
	}
}

// serveMany serves n similar tools over stdio.
func serveMany(ctx context.Context, n int) int {
	s := mcp.NewServer(&mcp.Implementation{Name: "many", Version: "1"}, nil)
	for i := range n {
		name := fmt.Sprintf("gadget_%d", i)
		s.AddTool(&mcp.Tool{Name: name, Description: fmt.Sprintf("Adjust gadget number %d: its size, its colour and its position among the other gadgets.", i),
			InputSchema: json.RawMessage(`{"type":"object","properties":{"size":{"type":"integer","description":"the new size"},"colour":{"type":"string","description":"the new colour"}}}`)},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "adjusted " + name}}}, nil
			})
	}
	if err := s.Run(ctx, &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "many:", err)
		return 1
	}
	return 0
}

// runGatewayStdio runs the gateway over stdio, for clients that spawn it
// (the Go client's CommandTransport, the TypeScript client).
func runGatewayStdio(ctx context.Context) int {
	cfg, err := config.Load(os.Getenv("TOOLSEARCH_TEST_CONFIG"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	g, err := New(cfg, Options{Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, cancel := context.WithCancel(ctx)
	g.Start(ctx)
	err = g.ServeStdio(ctx, os.Getenv("TOOLSEARCH_TEST_MODE"))
	cancel()
	g.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// self is the path of the test binary, which runs the helper roles.
func self(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// repoRoot finds the module root (for node_modules).
func repoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// npmBin returns node_modules/.bin/name, or skips the test when npm ci has
// not been run.
func npmBin(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(repoRoot(t), "node_modules", ".bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s is absent: run `npm ci` at the repository root to install the test MCP servers", p)
	}
	return p
}

// roleServer is a config entry that runs the test binary as a role.
func roleServer(t testing.TB, role string) map[string]any {
	return map[string]any{"command": self(t), "env": map[string]string{roleEnv: role}}
}

// writeConfig writes a config file and returns its path.
func writeConfig(t testing.TB, servers map[string]any, gw map[string]any) string {
	t.Helper()
	doc := map[string]any{"mcpServers": servers}
	if gw != nil {
		doc["toolsearch"] = gw
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "toolsearch.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// startGateway loads the config, starts the gateway and stops it at the
// end of the test.
func startGateway(t testing.TB, path string) *Gateway {
	t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	level := slog.LevelError
	if testing.Verbose() {
		level = slog.LevelInfo
	}
	g, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.Start(ctx)
	t.Cleanup(func() { stopGateway(t, g, cancel) })
	return g
}

// stopGateway cancels a started gateway and waits, within bounds, for it to
// close.
func stopGateway(t testing.TB, g *Gateway, cancel context.CancelFunc) {
	t.Helper()
	cancel()
	bounded(t, "closing the gateway", 20*time.Second, g.Close)
}

// waitState waits until the server reaches one of the states.
func waitState(t testing.TB, g *Gateway, key string, timeout time.Duration, states ...State) Status {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, st := range g.Statuses() {
			if st.Key == key {
				for _, want := range states {
					if st.State == want {
						return st
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("server %s is %s (%s), want %v", key, st.State, st.Error, states)
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type configT = config.Config

func loadConfigFile(path string) (*config.Config, error) { return config.Load(path) }
