package lsp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/gateway/builtin/files"
)

// fakeRole makes the test binary act as a small language server.
const fakeRole = "TOOLSEARCH_LSP_FAKE"

func TestMain(m *testing.M) {
	if os.Getenv(fakeRole) != "" {
		os.Exit(fakeServer())
	}
	os.Exit(m.Run())
}

// fakeServer answers initialize, definition (the first line of the
// document), hover, and exits on references (a crash).
func fakeServer() int {
	r := bufio.NewReader(os.Stdin)
	send := func(v any) {
		_ = writeMessage(os.Stdout, v)
	}
	// A server-to-client request the client must answer.
	send(map[string]any{"jsonrpc": "2.0", "id": "cfg-1", "method": "workspace/configuration", "params": map[string]any{"items": []any{map[string]any{}}}})
	for {
		body, err := readMessage(r)
		if err != nil {
			return 0
		}
		var m message
		if json.Unmarshal(body, &m) != nil {
			continue
		}
		switch m.Method {
		case "initialize":
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"capabilities": map[string]any{}}})
		case "textDocument/definition":
			var p struct {
				TextDocument struct {
					URI string `json:"uri"`
				} `json:"textDocument"`
			}
			_ = json.Unmarshal(m.Params, &p)
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": []any{map[string]any{"uri": p.TextDocument.URI,
				"range": map[string]any{"start": map[string]any{"line": 0, "character": 2}, "end": map[string]any{"line": 0, "character": 3}}}}})
		case "textDocument/hover":
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"contents": map[string]any{"kind": "markdown", "value": "fake hover"}}})
		case "textDocument/references":
			fmt.Fprintln(os.Stderr, "fake: crashing as asked")
			return 3
		case "shutdown":
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": nil})
		case "exit":
			return 0
		default:
			if len(m.ID) > 0 && m.Method != "" {
				send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found: " + m.Method}})
			}
		}
	}
}

func selfBinary(t testing.TB) string {
	t.Helper()
	p, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func writeTree(t testing.TB, files map[string]string) (string, files.Roots) {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	real, _ := filepath.EvalSymlinks(dir)
	r, err := filesRoots(real)
	if err != nil {
		t.Fatal(err)
	}
	return real, r
}

func filesRoots(dir string) (files.Roots, error) { return files.NewRoots([]string{dir}) }

func TestFakeServerCrashAndRestart(t *testing.T) {
	t.Setenv(fakeRole, "1") // inherited by the servers started; not parallel
	_, roots := writeTree(t, map[string]string{"a.fake": "x = 1\ny = 2\n"})
	m := NewManager(map[string]ServerConfig{"fake": {Command: selfBinary(t), Extensions: []string{".fake"}}}, Options{Timeout: 10 * time.Second})
	defer m.Close()
	ctx := context.Background()
	got, err := m.Do(ctx, roots, Args{Operation: OpDefinition, Path: "a.fake", Line: 2, Column: 1})
	if err != nil || got != "a.fake:1:3: x = 1" {
		t.Fatalf("definition = %q, %v", got, err)
	}
	if got, err := m.Do(ctx, roots, Args{Operation: OpHover, Path: "a.fake", Line: 1, Column: 1}); err != nil || got != "fake hover" {
		t.Fatalf("hover = %q, %v", got, err)
	}
	// references makes the fake crash: a clear error, then a restart.
	_, err = m.Do(ctx, roots, Args{Operation: OpReferences, Path: "a.fake", Line: 1, Column: 1})
	if err == nil || !strings.Contains(err.Error(), "exited") || !strings.Contains(err.Error(), "restarted on the next call") || !strings.Contains(err.Error(), "crashing as asked") {
		t.Fatalf("crash error = %v", err)
	}
	if got, err := m.Do(ctx, roots, Args{Operation: OpHover, Path: "a.fake", Line: 1, Column: 1}); err != nil || got != "fake hover" {
		t.Fatalf("after the restart, hover = %q, %v", got, err)
	}
	// An operation the server does not support says so.
	if _, err := m.Do(ctx, roots, Args{Operation: OpDocumentSymbols, Path: "a.fake"}); err == nil || !strings.Contains(err.Error(), "method not found") {
		t.Fatalf("unsupported = %v", err)
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	_, roots := writeTree(t, map[string]string{"a.go": "package a\n", "b.txt": "x"})
	m := NewManager(map[string]ServerConfig{"go": {Command: "toolsearch-no-such-language-server", Extensions: []string{".go"}}}, Options{Timeout: 5 * time.Second})
	defer m.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		args Args
		err  string
	}{
		{Args{Operation: OpDefinition, Path: "a.go", Line: 1, Column: 1}, "not installed or not on PATH"},
		{Args{Operation: "rename", Path: "a.go"}, "unknown operation"},
		{Args{Operation: OpDefinition, Path: "b.txt", Line: 1, Column: 1}, "no language server is configured for .txt"},
		{Args{Operation: OpDefinition, Path: "../x.go", Line: 1, Column: 1}, "outside the allowed roots"},
		{Args{Operation: OpDefinition, Line: 1, Column: 1}, "needs path"},
		{Args{Operation: OpWorkspaceSymbols}, "needs a query"},
		{Args{Operation: OpWorkspaceSymbols, Query: "x", Language: "rust"}, "no language server is configured for \"rust\""},
	} {
		if _, err := m.Do(ctx, roots, tc.args); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%+v: err = %v, want %q", tc.args, err, tc.err)
		}
	}
}

func TestColumns(t *testing.T) {
	t.Parallel()
	data := []byte("a := \"é😀x\"\nsecond\n")
	for _, tc := range []struct{ line, col, want int }{
		{1, 1, 0}, {1, 6, 5}, {1, 7, 6}, {1, 8, 7}, {1, 9, 9}, {1, 99, 11}, {2, 3, 2},
	} {
		got, err := utf16Col(data, tc.line, tc.col)
		if err != nil || got != tc.want {
			t.Errorf("utf16Col(%d, %d) = %d, %v; want %d", tc.line, tc.col, got, err, tc.want)
		}
		if tc.col < 12 {
			if back := charCol(strings.Split(string(data), "\n")[tc.line-1], got); back != tc.col {
				t.Errorf("charCol(%d) = %d, want %d", got, back, tc.col)
			}
		}
	}
	if _, err := utf16Col(data, 9, 1); err == nil {
		t.Error("line 9 accepted")
	}
}

func FuzzReadMessage(f *testing.F) {
	f.Add([]byte("Content-Length: 2\r\n\r\n{}"))
	f.Add([]byte("Content-Length: 99999999999\r\n\r\n"))
	f.Add([]byte("X: y\r\n\r\n"))
	f.Add([]byte("Content-Length: -1\r\n\r\n"))
	f.Add([]byte("no colon\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		body, err := readMessage(bufio.NewReader(bytes.NewReader(data)))
		if err == nil && len(body) > len(data) {
			t.Fatalf("body of %d bytes from %d bytes", len(body), len(data))
		}
	})
}

func FuzzAnswers(f *testing.F) {
	f.Add([]byte(`[{"uri":"file:///x/a.go","range":{"start":{"line":0,"character":0}}}]`))
	f.Add([]byte(`{"contents":[{"language":"go","value":"x"},"y"]}`))
	f.Add([]byte(`[{"name":"A","kind":12,"children":[{"name":"B","kind":6}]}]`))
	f.Add([]byte(`[{"from":{"name":"f","uri":"file:///a"},"fromRanges":[{"start":{"line":1}}]}]`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		r := &render{files: map[string][]string{}}
		_, _ = r.locations(raw, "definition")
		_, _ = hoverText(raw)
		_, _ = r.symbols(raw, "/x/a.go")
		_, _ = r.calls(raw, true)
	})
}

// TestGopls runs every operation against gopls on a small module.
func TestGopls(t *testing.T) {
	t.Parallel()
	gopls, err := exec.LookPath("gopls")
	if err != nil {
		t.Skip("gopls is not on PATH; install it with: go install golang.org/x/tools/gopls@v0.23.0")
	}
	_, roots := writeTree(t, map[string]string{
		"go.mod": "module example.com/lspdemo\n\ngo 1.22\n",
		"a.go": "package lspdemo\n\n// Greet returns a greeting.\nfunc Greet(name string) string { return \"hi \" + name }\n\n" +
			"// Caller calls Greet.\nfunc Caller() string { return Greet(\"x\") }\n",
		"b.go": "package lspdemo\n\ntype Thing struct{ N int }\n\nfunc Other() { _ = Greet(\"y\") }\n",
	})
	m := NewManager(map[string]ServerConfig{"go": {Command: gopls, Args: []string{"serve"}, Extensions: []string{".go"}}}, Options{Timeout: 50 * time.Second})
	defer m.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		args     Args
		contains []string
	}{
		{Args{Operation: OpDefinition, Path: "a.go", Line: 7, Column: 31}, []string{"a.go:4:6: func Greet(name string) string"}},
		{Args{Operation: OpReferences, Path: "a.go", Line: 4, Column: 6}, []string{"a.go:4:6", "a.go:7:31", "b.go:5:20"}},
		{Args{Operation: OpHover, Path: "a.go", Line: 4, Column: 7}, []string{"func Greet(name string) string", "Greet returns a greeting"}},
		{Args{Operation: OpDocumentSymbols, Path: "b.go"}, []string{"struct Thing", "function Other", "b.go:3:6"}},
		{Args{Operation: OpWorkspaceSymbols, Query: "Caller"}, []string{"function Caller", "a.go:7:6"}},
		{Args{Operation: OpIncomingCalls, Path: "a.go", Line: 4, Column: 6}, []string{"Called from:", "Caller — a.go:7:6", "Other — b.go:5:6"}},
		{Args{Operation: OpOutgoingCalls, Path: "a.go", Line: 7, Column: 6}, []string{"Calls:", "Greet — a.go:4:6"}},
	} {
		got, err := m.Do(ctx, roots, tc.args)
		if err != nil {
			t.Errorf("%s: %v", tc.args.Operation, err)
			continue
		}
		for _, c := range tc.contains {
			if !strings.Contains(got, c) {
				t.Errorf("%s: output lacks %q:\n%s", tc.args.Operation, c, got)
			}
		}
	}
}
