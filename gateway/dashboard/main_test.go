package dashboard_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/enrich/enrichtest"
	"github.com/toolsearch/toolsearch/gateway"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/gateway/dashboard"
)

// roleEnv makes the test binary an upstream MCP server instead of running
// the tests.
const roleEnv = "TOOLSEARCH_DASHBOARD_TEST_ROLE"

// attack is markup an upstream server or a model may send: the pages must
// show it as text and run none of it.
const attack = `<script>window.__pwned=1</script>"><img src=x onerror="window.__pwned=2">`

// upstreamSecret is an API key in the hostile server's environment, which
// it writes to stderr: the dashboard shows it redacted.
const upstreamSecret = "hostile-secret-value-9137"

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(runRole(role))
	}
	os.Exit(m.Run())
}

type noteArgs struct {
	Text string `json:"text" jsonschema:"the text to keep"`
}

// runRole serves the hostile upstream over stdio: one tool whose
// description and title are markup, one plain tool, and stderr with
// markup and its secret.
func runRole(role string) int {
	if role == "skills" {
		return serveSkillsRole() // skills_test.go
	}
	if role != "hostile" {
		fmt.Fprintf(os.Stderr, "unknown role %q\n", role)
		return 2
	}
	fmt.Fprintf(os.Stderr, "hostile starting with key %s %s\n", os.Getenv("HOSTILE_API_KEY"), attack)
	s := mcp.NewServer(&mcp.Implementation{Name: "hostile", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "render_page", Title: attack, Description: "Render a page of markup " + attack},
		func(ctx context.Context, req *mcp.CallToolRequest, in noteArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: attack}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "keep_note", Description: "Keep a short note in the notebook and return its number."},
		func(ctx context.Context, req *mcp.CallToolRequest, in noteArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "kept note 1: " + in.Text}}}, nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil && err != io.EOF {
		fmt.Fprintln(os.Stderr, "hostile:", err)
		return 1
	}
	return 0
}

// repoRoot is the module root (for node_modules).
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// npmBin returns node_modules/.bin/name, or "" when npm ci has not been
// run.
func npmBin(name string) string {
	p := filepath.Join(repoRoot(), "node_modules", ".bin", name)
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// rigOptions say what a rig runs.
type rigOptions struct {
	// npm adds the everything and memory servers of node_modules
	// (skipping the test when they are absent).
	npm bool
	// dashboard is the toolsearch.dashboard object (nil: the defaults).
	dashboard map[string]any
	// token is the auth token ("" for none).
	token string
	// enrich turns background enrichment on, against a stand-in of an
	// OpenAI-compatible server that answers every request with hints.
	enrich bool
	// exposure is toolsearch.exposure ("": search); idle is
	// toolsearch.http.sessionIdleTimeout ("": the default).
	exposure, idle string
}

// rig is a started gateway with a dashboard, served on a loopback port.
type rig struct {
	g     *gateway.Gateway
	d     *dashboard.Dashboard
	url   string
	token string
	// exposure is the configured exposure, which stdio connections get.
	exposure string
}

// newRig starts a gateway with the hostile server (and, with npm, the
// everything and memory servers), its dashboard, and an HTTP server on
// loopback, all stopped at the end of the test.
func newRig(t *testing.T, o rigOptions) *rig {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	servers := map[string]any{
		"hostile": map[string]any{"command": exe, "env": map[string]string{roleEnv: "hostile", "HOSTILE_API_KEY": upstreamSecret}},
	}
	if o.npm {
		everything, memory := npmBin("mcp-server-everything"), npmBin("mcp-server-memory")
		if everything == "" || memory == "" {
			t.Skipf("the npm MCP servers are absent from %s: run `npm ci` at the repository root", filepath.Join(repoRoot(), "node_modules"))
		}
		servers["everything"] = map[string]any{"command": everything}
		servers["memory"] = map[string]any{"command": memory, "env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}}
	}
	ts := map[string]any{"stateDir": t.TempDir(), "exposure": cmp.Or(o.exposure, "search")}
	if o.dashboard != nil {
		ts["dashboard"] = o.dashboard
	}
	httpSettings := map[string]any{}
	if o.token != "" {
		httpSettings["authToken"] = o.token
	}
	if o.idle != "" {
		httpSettings["sessionIdleTimeout"] = o.idle
	}
	if len(httpSettings) > 0 {
		ts["http"] = httpSettings
	}
	if o.enrich {
		stand := enrichtest.New(t, enrichtest.OpenAI, nil)
		// A server at a baseURL takes any key: the environment's, or none.
		stand.APIKey = cmp.Or(os.Getenv(config.OpenAIKeyEnv), "none")
		ts["enrich"] = map[string]any{"enabled": true, "provider": "openai", "baseURL": stand.URL + "/v1/", "model": "small-model"}
	}
	b, err := json.Marshal(map[string]any{"mcpServers": servers, "toolsearch": ts})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "toolsearch.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	d := dashboard.New(dashboard.FromConfig(cfg.Gateway.Dashboard))
	level := slog.LevelError
	if testing.Verbose() {
		level = slog.LevelInfo
	}
	g, err := gateway.New(cfg, gateway.Options{Feed: d, UI: d,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.Start(ctx)
	srv := httptest.NewUnstartedServer(g.Handler(""))
	srv.Config.RegisterOnShutdown(d.Close)
	srv.Start()
	t.Cleanup(func() {
		d.Close()
		srv.Close()
		cancel()
		done := make(chan struct{})
		go func() { g.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("the gateway did not close within 20 s")
		}
	})
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	if err := g.WaitSettled(wctx); err != nil {
		t.Fatalf("the upstream servers did not start: %v", err)
	}
	for _, st := range g.Statuses() {
		if st.State != gateway.StateReady {
			t.Fatalf("server %s is %s (%s)", st.Key, st.State, st.Error)
		}
	}
	return &rig{g: g, d: d, url: srv.URL, token: o.token, exposure: cfg.Gateway.Exposure}
}

// bearer adds the rig's token to requests.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.next.RoundTrip(r)
}

// client connects an MCP client named name to the rig's /mcp.
func (r *rig) client(t *testing.T, name string) *mcp.ClientSession {
	t.Helper()
	return r.clientAs(t, name, "1.0", "2025-11-25")
}

// clientAs connects an MCP client of the given name, version and
// protocol version (2026-07-28 has no session) to the rig's /mcp.
func (r *rig) clientAs(t *testing.T, name, version, protocol string) *mcp.ClientSession {
	t.Helper()
	cl := mcp.NewClient(&mcp.Implementation{Name: name, Version: version}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: r.url + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{r.token, http.DefaultTransport}}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := cl.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatalf("connecting %s: %v", name, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// stdio connects an MCP client of the given name and protocol version
// to the rig's gateway as serve's stdio does (one connection, one
// client), over in-memory transports; closing the client ends the
// connection.
func (r *rig) stdio(t *testing.T, name, protocol string) *mcp.ClientSession {
	t.Helper()
	return r.stdioIn(t, r.exposure, name, "1.0", protocol)
}

// stdioIn is stdio in the given exposure, for a client of the given
// version.
func (r *rig) stdioIn(t *testing.T, exposure, name, version, protocol string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := r.g.Connect(ctx, exposure, st); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: version}, nil).Connect(ctx, ct,
		&mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatalf("connecting %s over stdio: %v", name, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// call calls a tool and returns its text.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s: %v", name, err)
	}
	var sb strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			sb.WriteString(tc.Text)
		}
	}
	if res.IsError {
		t.Fatalf("%s answered an error: %s", name, sb.String())
	}
	return sb.String()
}

// search runs search_tools and returns the names found.
func search(t *testing.T, cs *mcp.ClientSession, query string) []string {
	t.Helper()
	var out struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	text := call(t, cs, "search_tools", map[string]any{"query": query})
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("search_tools answered %q: %v", text, err)
	}
	var names []string
	for _, tl := range out.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// get fetches a path of the rig with its token and returns the status and
// body.
func (r *rig) get(t *testing.T, path string, header map[string]string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, r.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Transport: bearer{r.token, http.DefaultTransport}, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return resp.StatusCode, resp.Header, string(b)
}

// state reads /ui/api/state.
func (r *rig) state(t *testing.T) dashboard.State {
	t.Helper()
	code, _, body := r.get(t, "/ui/api/state", nil)
	if code != http.StatusOK {
		t.Fatalf("/ui/api/state answered %d: %s", code, body)
	}
	var st dashboard.State
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("/ui/api/state: %v in %s", err, body)
	}
	return st
}

// eventually polls cond until it holds or the time is up.
func eventually(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
