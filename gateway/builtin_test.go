package gateway

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/gateway/upstream"
)

// workspace writes a small tree for the file tools.
func workspace(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for p, c := range map[string]string{
		"go.mod":           "module example.com/ws\n",
		"main.go":          "package main\n\nfunc main() { Greet() }\n",
		"greet.go":         "package main\n\n// Greet says hello.\nfunc Greet() { println(\"hello gateway\") }\n",
		"docs/guide.md":    "# Guide\nSay hello.\n",
		".gitignore":       "build/\n",
		"build/out.go":     "package build // hello from an ignored file\n",
		"vendor/x/y/z.txt": "deep hello\n",
		"data/blob.bin":    "hello\x00binary",
		"docs/notes/a.txt": "nothing here\n",
	} {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return real
}

// TestBuiltinsEndToEnd drives list → search → call of the built-in tools
// through the gateway with the Go SDK client: glob and grep always loaded,
// the resource tools present because an upstream declares resources, the
// configured roots used when the client declares none, the client's roots
// when it does.
func TestBuiltinsEndToEnd(t *testing.T) {
	t.Parallel()
	ws := workspace(t)
	cfg := writeConfig(t, map[string]any{"echo": roleServer(t, "echo")},
		map[string]any{"builtins": map[string]any{"roots": []string{ws}, "lsp": false, "web_fetch": true}})
	g := startGateway(t, cfg)
	waitState(t, g, "echo", 20*time.Second, StateReady)
	srv := httptest.NewServer(g.Handler(""))
	t.Cleanup(srv.Close)

	t.Run("search mode", func(t *testing.T) {
		t.Parallel()
		c := connectHTTP(t, srv.URL+"/mcp/search", nil)
		names := c.toolNames(t)
		for _, want := range []string{"builtin__glob", "builtin__grep", searchToolName, callToolName} {
			if !slices.Contains(names, want) {
				t.Errorf("search mode lists %v: %s is missing", names, want)
			}
		}
		for _, deferred := range []string{"builtin__web_fetch", "builtin__list_resources", "builtin__read_resource"} {
			if slices.Contains(names, deferred) {
				t.Errorf("%s is listed, but it is deferred", deferred)
			}
		}
		// Deferred built-ins are found by search.
		for q, want := range map[string]string{
			"list the resources MCP servers offer": "builtin__list_resources",
			"read a resource by uri":               "builtin__read_resource",
			"fetch a web page url as markdown":     "builtin__web_fetch",
			"find files by name pattern":           "builtin__glob",
		} {
			if hits := c.search(t, q); !slices.Contains(hits, want) {
				t.Errorf("search %q found %v, not %s", q, hits, want)
			}
		}
		// glob and grep by their own names.
		text, isErr := c.call(t, "builtin__glob", map[string]any{"pattern": "**/*.go"})
		if isErr || !strings.Contains(text, "main.go") || !strings.Contains(text, "greet.go") || strings.Contains(text, "build/out.go") {
			t.Errorf("glob = %q, %v", text, isErr)
		}
		text, isErr = c.call(t, "builtin__grep", map[string]any{"pattern": "hello", "output_mode": "content"})
		if isErr || !strings.Contains(text, `greet.go:4:func Greet() { println("hello gateway") }`) ||
			strings.Contains(text, "blob.bin") || strings.Contains(text, "build/") {
			t.Errorf("grep = %q, %v", text, isErr)
		}
		// A path outside the roots is refused.
		text, isErr = c.call(t, "builtin__grep", map[string]any{"pattern": "root", "path": "../.."})
		if !isErr || !strings.Contains(text, "outside the allowed roots") {
			t.Errorf("grep outside = %q, %v", text, isErr)
		}
		// Arguments are validated against the schema.
		text, isErr = c.call(t, "builtin__grep", map[string]any{"pattern": "x", "output_mode": "lines"})
		if !isErr || !strings.Contains(text, "input schema") {
			t.Errorf("grep with a bad mode = %q, %v", text, isErr)
		}
		// The resource tools, through call_tool.
		text, isErr = c.call(t, callToolName, map[string]any{"name": "builtin__list_resources"})
		if isErr || !strings.Contains(text, "echo://readme") || !strings.Contains(text, `"server": "echo"`) {
			t.Errorf("list_resources = %q, %v", text, isErr)
		}
		text, isErr = c.call(t, callToolName, map[string]any{"name": "read_resource", "arguments": map[string]any{"server": "echo", "uri": "echo://readme"}})
		if isErr || text != "echo readme" {
			t.Errorf("read_resource = %q, %v", text, isErr)
		}
		text, isErr = c.call(t, callToolName, map[string]any{"name": "builtin__read_resource", "arguments": map[string]any{"server": "nope", "uri": "echo://readme"}})
		if !isErr || !strings.Contains(text, `no server is named "nope"`) {
			t.Errorf("read_resource of an unknown server = %q, %v", text, isErr)
		}
	})
	t.Run("client roots", func(t *testing.T) {
		t.Parallel()
		other := workspace(t)
		if err := os.WriteFile(filepath.Join(other, "only_here.go"), []byte("package main\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cl, c := newClient(nil)
		//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
		cl.AddRoots(&mcp.Root{URI: "file://" + filepath.ToSlash(other), Name: "other"})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp/full"}, legacySession)
		if err != nil {
			t.Fatal(err)
		}
		c.cs = cs
		t.Cleanup(func() { cs.Close() })
		names := c.toolNames(t)
		for _, want := range []string{"builtin__glob", "builtin__grep", "builtin__web_fetch", "builtin__list_resources", "builtin__read_resource", "echo"} {
			if !slices.Contains(names, want) {
				t.Errorf("full mode lacks %s: %v", want, names)
			}
		}
		text, isErr := c.call(t, "builtin__glob", map[string]any{"pattern": "*.go"})
		if isErr || !strings.Contains(text, "only_here.go") {
			t.Errorf("glob in the client's root = %q, %v", text, isErr)
		}
		// The configured root is not the client's: refused.
		text, isErr = c.call(t, "builtin__glob", map[string]any{"pattern": "*", "path": ws})
		if !isErr || !strings.Contains(text, "outside the allowed roots") {
			t.Errorf("glob in the configured root = %q, %v", text, isErr)
		}
	})
}

// TestBuiltinsSwitches: tools switched off are absent; the resource tools
// appear only when an upstream declares resources; web_fetch only when
// configured; with no roots at all the file tools are not shown, and a
// call of one says why.
func TestBuiltinsSwitches(t *testing.T) {
	t.Parallel()
	ws := workspace(t)
	for _, tc := range []struct {
		name     string
		builtins map[string]any
		servers  map[string]any
		want     []string
		absent   []string
	}{
		{name: "off", builtins: map[string]any{"glob": false, "grep": map[string]any{"enabled": false}, "web_fetch": false, "lsp": false, "resources": false},
			servers: map[string]any{"echo": roleServer(t, "echo")},
			absent:  []string{"builtin__glob", "builtin__grep", "builtin__web_fetch", "builtin__list_resources", "builtin__lsp"}},
		{name: "defaults, no roots, no resources", builtins: map[string]any{"lsp": false},
			absent: []string{"builtin__glob", "builtin__grep", "builtin__web_fetch", "builtin__list_resources", "builtin__read_resource", "builtin__web_search"}},
		{name: "roots", builtins: map[string]any{"lsp": false, "roots": []string{ws}},
			want:   []string{"builtin__glob", "builtin__grep"},
			absent: []string{"builtin__web_fetch", "builtin__web_search"}},
		{name: "always load", builtins: map[string]any{"lsp": false, "roots": []string{ws}, "web_fetch": map[string]any{"alwaysLoad": true}},
			want: []string{"builtin__glob", "builtin__grep", "builtin__web_fetch"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			servers := tc.servers
			if servers == nil {
				servers = map[string]any{}
			}
			g := startGateway(t, writeConfig(t, servers, map[string]any{"builtins": tc.builtins}))
			for k := range servers {
				waitState(t, g, k, 20*time.Second, StateReady)
			}
			srv := httptest.NewServer(g.Handler(""))
			t.Cleanup(srv.Close)
			mode := "full"
			if tc.name == "always load" || strings.HasPrefix(tc.name, "defaults") {
				mode = "search"
			}
			c := connectHTTP(t, srv.URL+"/mcp/"+mode, nil)
			names := c.toolNames(t)
			for _, w := range tc.want {
				if !slices.Contains(names, w) {
					t.Errorf("%s lacks %s: %v", mode, w, names)
				}
			}
			for _, a := range tc.absent {
				if slices.Contains(names, a) {
					t.Errorf("%s lists %s: %v", mode, a, names)
				}
			}
			if strings.HasPrefix(tc.name, "defaults") {
				text, isErr := c.call(t, callToolName, map[string]any{"name": "builtin__glob", "arguments": map[string]any{"pattern": "*"}})
				if !isErr || !strings.Contains(text, "no roots") {
					t.Errorf("glob without roots = %q, %v", text, isErr)
				}
			}
		})
	}
}

// TestBuiltinsBadConfig: a bad builtins object fails New with the field.
func TestBuiltinsBadConfig(t *testing.T) {
	t.Parallel()
	for _, b := range []map[string]any{
		{"glob": "yes"},
		{"web_search": map[string]any{"provider": "bing"}},
		{"web_search": map[string]any{"provider": "searxng"}},
		{"lsp": map[string]any{"cobol": map[string]any{"command": "cobol-ls"}}},
		{"web_fetch": map[string]any{"timeout": "soon"}},
	} {
		cfg, err := loadCfg(t, writeConfig(t, nil, map[string]any{"builtins": b}))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := New(cfg, Options{}); err == nil || !strings.Contains(err.Error(), "builtins.") {
			t.Errorf("builtins %v: err = %v", b, err)
		}
	}
}

// serveDeclaresResources is a server that declares the resources
// capability and lists no resource (role "declares-resources").
func serveDeclaresResources(ctx context.Context) int {
	s := mcp.NewServer(&mcp.Implementation{Name: "declares", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Resources: &mcp.ResourceCapabilities{ListChanged: true}},
	})
	mcp.AddTool(s, &mcp.Tool{Name: "noop", Description: "Do nothing."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
		})
	if err := s.Run(ctx, &mcp.StdioTransport{}); err != nil {
		return 1
	}
	return 0
}

// TestResourceToolsFollowDeclaredCapability: list_resources and
// read_resource exist when, and only when, some upstream declares the
// resources capability — whether or not it lists resources — and the
// cached manifest remembers the declaration, so a gateway that starts from
// the cache decides the same before any server is up. server-filesystem
// declares no resources; server-everything and server-memory declare them
// and list some; the Go server "declares-resources" declares them and
// lists none.
func TestResourceToolsFollowDeclaredCapability(t *testing.T) {
	t.Parallel()
	resTools := []string{"builtin__list_resources", "builtin__read_resource"}
	for _, tc := range []struct {
		name    string
		servers func(t *testing.T) map[string]any
		want    bool
	}{
		{"filesystem declares none", func(t *testing.T) map[string]any {
			return map[string]any{"filesystem": map[string]any{"command": npmBin(t, "mcp-server-filesystem"), "args": []string{t.TempDir()}}}
		}, false},
		{"everything declares them", func(t *testing.T) map[string]any {
			return map[string]any{"everything": map[string]any{"command": npmBin(t, "mcp-server-everything")}}
		}, true},
		{"memory declares them", func(t *testing.T) map[string]any {
			return map[string]any{"memory": map[string]any{"command": npmBin(t, "mcp-server-memory"),
				"env": map[string]string{"MEMORY_FILE_PATH": t.TempDir() + "/memory.jsonl"}}}
		}, true},
		{"declared, none listed", func(t *testing.T) map[string]any {
			return map[string]any{"declares": roleServer(t, "declares-resources")}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			servers := tc.servers(t)
			var key string
			for k := range servers {
				key = k
			}
			state := t.TempDir()
			gw := map[string]any{"stateDir": state, "builtins": map[string]any{"lsp": false}, "limits": map[string]any{"startTimeout": "60s"}}
			check := func(g *Gateway, when string) {
				t.Helper()
				for _, name := range resTools {
					_, has := g.Snapshot().Tool(strings.Replace(name, "__", "/", 1))
					if has != tc.want {
						t.Errorf("%s: %s in the catalog: %v, want %v", when, name, has, tc.want)
					}
				}
			}
			{
				g := startGateway(t, writeConfig(t, servers, gw))
				waitState(t, g, key, 60*time.Second, StateReady)
				check(g, "live")
				srv := serveHTTP(t, g.Handler("full"))
				c := connectHTTP(t, srv.URL+"/mcp", nil)
				if names := c.toolNames(t); slices.Contains(names, resTools[0]) != tc.want {
					t.Errorf("the full list %v: list_resources present %v, want %v", names, !tc.want, tc.want)
				}
				if tc.want {
					text, isErr := c.call(t, "builtin__list_resources", nil)
					if isErr {
						t.Errorf("list_resources: %s", text)
					}
				}
			}
			m, err := loadManifest(state, mustServer(t, writeConfig(t, servers, gw), key))
			if err != nil || m == nil || m.Capabilities == nil {
				t.Fatalf("cached manifest %+v (%v) records no capabilities", m, err)
			}
			if (m.Capabilities.Resources != nil) != tc.want {
				t.Errorf("cached capabilities: resources %+v", m.Capabilities.Resources)
			}
			// From the cache alone, with the server lazy (never started).
			if s, ok := servers[key].(map[string]any); ok {
				s["lazy"] = true
			}
			g := startGateway(t, writeConfig(t, servers, gw))
			if st := waitState(t, g, key, 10*time.Second, StateIdle, StateReady); st.State == StateIdle {
				check(g, "from the cache")
			}
		})
	}
}

// mustServer loads a config and returns its server key.
func mustServer(t *testing.T, path, key string) *config.Server {
	t.Helper()
	cfg, err := loadConfigFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range cfg.Servers {
		if s.Key == key {
			return s
		}
	}
	t.Fatalf("no server %s", key)
	return nil
}

// TestDeclaresResources: a manifest cached before capabilities were
// recorded counts as declaring resources when it lists some.
func TestDeclaresResources(t *testing.T) {
	for _, tc := range []struct {
		m    *upstream.Manifest
		want bool
	}{
		{nil, false},
		{&upstream.Manifest{}, false},
		{&upstream.Manifest{Resources: []*mcp.Resource{{URI: "a://b"}}}, true},
		{&upstream.Manifest{Templates: []*mcp.ResourceTemplate{{URITemplate: "a://{b}"}}}, true},
		{&upstream.Manifest{Capabilities: &mcp.ServerCapabilities{}, Resources: []*mcp.Resource{{URI: "a://b"}}}, false},
		{&upstream.Manifest{Capabilities: &mcp.ServerCapabilities{Resources: &mcp.ResourceCapabilities{}}}, true},
	} {
		if got := declaresResources(tc.m); got != tc.want {
			t.Errorf("declaresResources(%+v) = %v, want %v", tc.m, got, tc.want)
		}
	}
}
