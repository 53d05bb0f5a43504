package clients

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// roleEnv makes the test binary run a helper role instead of the tests.
const roleEnv = "TOOLSEARCH_CLIENTS_ROLE"

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(runRole(role))
	}
	os.Exit(m.Run())
}

// runRole runs a helper role. "record" runs the command of
// TOOLSEARCH_CLIENTS_CMD (a JSON list) with this process's stdin, stdout
// and stderr, and copies every line the client wrote to stdin into the
// file TOOLSEARCH_CLIENTS_RECORD: what a client sent to its MCP server.
// The command's stderr goes to the file TOOLSEARCH_CLIENTS_LOG.
func runRole(role string) int {
	if role != "record" {
		fmt.Fprintf(os.Stderr, "unknown role %q\n", role)
		return 2
	}
	var argv []string
	if err := json.Unmarshal([]byte(os.Getenv("TOOLSEARCH_CLIENTS_CMD")), &argv); err != nil || len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "record: TOOLSEARCH_CLIENTS_CMD is not a JSON list of strings")
		return 2
	}
	rec, err := os.OpenFile(os.Getenv("TOOLSEARCH_CLIENTS_RECORD"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "record:", err)
		return 2
	}
	defer rec.Close()
	logf, err := os.OpenFile(os.Getenv("TOOLSEARCH_CLIENTS_LOG"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "record:", err)
		return 2
	}
	defer logf.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, logf
	in, err := cmd.StdinPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "record:", err)
		return 2
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "record:", err)
		return 1
	}
	go func() {
		// With TOOLSEARCH_CLIENTS_ERA=2025-11-25 the MCP 2026-07-28 probe
		// (server/discover) is answered as a server that does not speak
		// 2026-07-28 answers it, so the client falls back to initialize.
		refuse := os.Getenv("TOOLSEARCH_CLIENTS_ERA") == "2025-11-25"
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			line := sc.Bytes()
			_, _ = rec.Write(append(append([]byte(nil), line...), '\n'))
			var m rpcMessage
			if refuse && json.Unmarshal(line, &m) == nil && m.Method == "server/discover" && len(m.ID) > 0 {
				fmt.Fprintf(os.Stdout, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32022,"message":"unsupported protocol version","data":{"supported":["2025-11-25"],"requested":"2026-07-28"}}}`+"\n", m.ID)
				continue
			}
			if _, err := in.Write(append(append([]byte(nil), line...), '\n')); err != nil {
				break
			}
		}
		_ = in.Close()
	}()
	if err := cmd.Wait(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		fmt.Fprintln(os.Stderr, "record:", err)
		return 1
	}
	return 0
}

// repoRoot returns the module's root directory.
func repoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}

// nodeModule returns a path under node_modules, or skips the test when it
// is absent.
func nodeModule(t testing.TB, rel, what string) string {
	t.Helper()
	p := filepath.Join(repoRoot(t), "node_modules", filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s is absent (%s): run `npm ci` at the repository root to install it", p, what)
	}
	return p
}

// memoryServer returns the config entry of the reference memory server,
// keeping its knowledge graph in file.
func memoryServer(t testing.TB, file string) map[string]any {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the memory MCP server runs on it")
	}
	return map[string]any{"command": nodeModule(t, ".bin/mcp-server-memory", "the memory MCP server"),
		"env": map[string]string{"MEMORY_FILE_PATH": file}, "naming": "prefixed"}
}

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// toolsearchBin builds the toolsearch command once per test binary and
// returns its path.
func toolsearchBin(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "toolsearch-clients-")
		if err != nil {
			buildErr = err
			return
		}
		buildPath = filepath.Join(dir, "toolsearch")
		cmd := exec.Command("go", "build", "-o", buildPath, "./cmd/toolsearch")
		cmd.Dir = repoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatalf("building toolsearch: %v", buildErr)
	}
	return buildPath
}

// writeJSON writes v as JSON to path.
func writeJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// gatewayCommand returns the command and arguments a client runs as its
// MCP server: the built toolsearch serving cfgPath over stdio, wrapped by
// the test binary's record role, which copies what the client sends into
// recordPath. The gateway's log goes to logPath. With era "2025-11-25"
// the client's MCP 2026-07-28 probe is refused on the gateway's behalf, so
// that it speaks 2025-11-25 (sessions, initialize) with it.
func gatewayCommand(t testing.TB, cfgPath, recordPath, logPath string, era ...string) (string, []string, map[string]string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	argv, _ := json.Marshal([]string{toolsearchBin(t), "serve", "-c", cfgPath, "--log-level", "debug"})
	env := map[string]string{roleEnv: "record", "TOOLSEARCH_CLIENTS_CMD": string(argv),
		"TOOLSEARCH_CLIENTS_RECORD": recordPath, "TOOLSEARCH_CLIENTS_LOG": logPath}
	if len(era) > 0 && era[0] != "" {
		env["TOOLSEARCH_CLIENTS_ERA"] = era[0]
	}
	return self, nil, env
}

// run runs a client command with a timeout, killing it (and, through its
// closed pipes, what it started) when the timeout passes or the test
// ends. It returns stdout and stderr.
func run(t testing.TB, timeout time.Duration, dir string, env []string, name string, args ...string) (stdout, stderr []byte, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err = cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s did not finish within %v: %w", filepath.Base(name), timeout, err)
	}
	t.Logf("%s ran for %v", filepath.Base(name), time.Since(start).Round(time.Millisecond))
	return out.Bytes(), errb.Bytes(), err
}

// rpcMessage is one JSON-RPC message a client sent to its MCP server.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// recorded reads the messages the record role saved.
func recorded(t testing.TB, path string) []rpcMessage {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("what the client sent to the gateway: %v", err)
	}
	defer f.Close()
	var out []rpcMessage
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var m rpcMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("the client sent a line that is not JSON-RPC: %v: %.200s", err, line)
		}
		out = append(out, m)
	}
	return out
}

// toolCalls returns the tools/call requests of msgs: name and arguments.
func toolCalls(msgs []rpcMessage) []struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
} {
	var out []struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	for _, m := range msgs {
		if m.Method != "tools/call" {
			continue
		}
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if json.Unmarshal(m.Params, &p) == nil {
			out = append(out, p)
		}
	}
	return out
}

// tail returns the last n bytes of b, for failure messages.
func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// egress is a loopback HTTP proxy that refuses every request and records
// where it was going: given to a client as HTTPS_PROXY and HTTP_PROXY
// (with the loopback stand-ins in NO_PROXY), it catches the traffic the
// client would send anywhere else.
type egress struct {
	URL   string
	mu    sync.Mutex
	hosts []string
}

// newEgress starts an egress proxy that stops when the test ends.
func newEgress(t testing.TB) *egress {
	e := &egress{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.hosts = append(e.hosts, r.Method+" "+r.Host)
		e.mu.Unlock()
		http.Error(w, "no traffic leaves this test", http.StatusForbidden)
	}))
	t.Cleanup(srv.Close)
	e.URL = srv.URL
	return e
}

// env returns the proxy variables that send a client's traffic here.
func (e *egress) env() []string {
	return []string{"HTTPS_PROXY=" + e.URL, "HTTP_PROXY=" + e.URL, "https_proxy=" + e.URL, "http_proxy=" + e.URL,
		"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost"}
}

// attempts returns the requests the client tried to send elsewhere.
func (e *egress) attempts() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.hosts...)
}

// gatewayRun is one gateway a client test talks to, in front of a memory
// server started afresh: over stdio (the client starts it, through the
// record role) or over streamable HTTP (the test starts it, and the
// client reaches it through a loopback proxy that records what it sent).
type gatewayRun struct {
	dir     string
	cfgPath string
	// memFile is the memory server's knowledge graph.
	memFile string
	// logPath is the gateway's log; sentPath what the client sent it.
	logPath, sentPath string
	// cmd, args and env are what a stdio client runs as its MCP server.
	cmd  string
	args []string
	env  map[string]string
	// url is where an HTTP client connects.
	url string
}

// The transports a client reaches the gateway over.
const (
	transportStdio = "stdio"
	transportHTTP  = "http"
)

// startGateway writes the gateway's config (gw under toolsearch, with a
// state directory in dir) and makes it ready for a client over
// transport. With warm, `toolsearch status` has run first, so that the
// state directory holds the servers' tools (the cache a gateway starts
// from); without, the state directory is empty, as on a first launch.
// era is as for gatewayCommand (stdio only).
func startGateway(t testing.TB, dir string, gw map[string]any, transport string, warm bool, era string) *gatewayRun {
	t.Helper()
	r := &gatewayRun{dir: dir, cfgPath: filepath.Join(dir, "gateway.json"), memFile: filepath.Join(dir, "memory.jsonl"),
		logPath: filepath.Join(dir, "gateway.log"), sentPath: filepath.Join(dir, "sent.jsonl")}
	cfg := map[string]any{}
	for k, v := range gw {
		cfg[k] = v
	}
	cfg["stateDir"] = filepath.Join(dir, "state")
	writeJSON(t, r.cfgPath, map[string]any{"mcpServers": map[string]any{"memory": memoryServer(t, r.memFile)}, "toolsearch": cfg})
	if warm {
		out, _, err := run(t, 60*time.Second, dir, append(os.Environ(), "TMPDIR="+dir), toolsearchBin(t), "status", "-c", r.cfgPath)
		if err != nil || !strings.Contains(string(out), "memory") {
			t.Fatalf("toolsearch status, to warm the state directory: %v\n%s", err, out)
		}
	}
	switch transport {
	case transportStdio:
		r.cmd, r.args, r.env = gatewayCommand(t, r.cfgPath, r.sentPath, r.logPath, era)
	case transportHTTP:
		r.url = startHTTPGateway(t, r)
	default:
		t.Fatalf("unknown transport %q", transport)
	}
	return r
}

// serveAddrRE finds the address in serve's "serving streamable HTTP" line.
var serveAddrRE = regexp.MustCompile(`serving streamable HTTP"? addr=(\S+)`)

// startHTTPGateway starts `toolsearch serve --http` on a loopback port,
// stopped when the test ends, and a recording proxy in front of it; it
// returns the proxy's MCP endpoint.
func startHTTPGateway(t testing.TB, r *gatewayRun) string {
	t.Helper()
	logf, err := os.Create(r.logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(toolsearchBin(t), "serve", "-c", r.cfgPath, "--http", "127.0.0.1:0", "--log-level", "debug")
	cmd.Dir, cmd.Stderr, cmd.Env = r.dir, logf, append(os.Environ(), "TMPDIR="+r.dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		_ = logf.Close()
	})
	var addr string
	for deadline := time.Now().Add(30 * time.Second); addr == ""; {
		b, _ := os.ReadFile(r.logPath)
		if m := serveAddrRE.FindSubmatch(b); m != nil {
			addr = string(m[1])
			break
		}
		select {
		case <-done:
			t.Fatalf("toolsearch serve --http exited before listening:\n%s", b)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("toolsearch serve --http did not listen within 30s:\n%s", b)
		}
	}
	target, err := url.Parse("http://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := os.OpenFile(r.sentPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1 // event streams pass as they come
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost {
			body, err := io.ReadAll(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			req.Body = io.NopCloser(bytes.NewReader(body))
			var batch []json.RawMessage
			if json.Unmarshal(body, &batch) != nil {
				batch = []json.RawMessage{body}
			}
			mu.Lock()
			for _, m := range batch {
				var c bytes.Buffer
				if json.Compact(&c, m) == nil {
					_, _ = rec.Write(append(c.Bytes(), '\n'))
				}
			}
			mu.Unlock()
		}
		rp.ServeHTTP(w, req)
	}))
	t.Cleanup(func() { proxy.Close(); _ = rec.Close() })
	return proxy.URL + "/mcp"
}

// sent returns what the client sent the gateway.
func (r *gatewayRun) sent(t testing.TB) []rpcMessage { return recorded(t, r.sentPath) }

// log returns the gateway's log so far.
func (r *gatewayRun) log() string {
	b, _ := os.ReadFile(r.logPath)
	return string(b)
}

// memory returns the memory server's knowledge graph.
func (r *gatewayRun) memory() string {
	b, _ := os.ReadFile(r.memFile)
	return string(b)
}
