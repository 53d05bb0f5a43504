package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// roleEnv makes the test binary a helper MCP server instead of running
// tests.
const roleEnv = "TOOLSEARCH_CMD_TEST_ROLE"

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(runRole(role))
	}
	code := m.Run()
	if builtDir != "" {
		os.RemoveAll(builtDir)
	}
	os.Exit(code)
}

// builtDir holds the toolsearch binary built for the tests that run it as
// a process of its own, once made.
var builtDir string

// buildOnce builds toolsearch the first time a test asks for it; the tests
// share the binary rather than each running go build, which on a small
// machine takes a good part of a minute.
var buildOnce = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "toolsearch-test-bin-")
	if err != nil {
		return "", fmt.Errorf("a folder for the binary: %w", err)
	}
	builtDir = dir
	bin := filepath.Join(dir, "toolsearch")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	return bin, nil
})

// toolsearchBinary returns the path of toolsearch built from this package,
// built once for every test that asks.
func toolsearchBinary(t testing.TB) string {
	t.Helper()
	bin, err := buildOnce()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func runRole(role string) int {
	switch role {
	case "leaky":
		return serveLeaky()
	case "cli":
		// The test binary as the toolsearch command, for tests that need
		// it as a process of its own.
		return run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)
	case "notes":
		return serveNotes()
	case "skills":
		return serveSkills() // skills_test.go
	case "hang":
		// Reads its input and never answers initialize.
		fmt.Fprintln(os.Stderr, "hang: listening, never answering")
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 0
	case "fail-loud":
		// Dies at once, its stderr retitling the terminal and showing
		// its key.
		fmt.Fprintf(os.Stderr, "\x1b]0;pwned\x07\x1b[2Jfatal: key %s refused\n", os.Getenv("API_KEY"))
		return 3
	}
	fmt.Fprintf(os.Stderr, "unknown role %q\n", role)
	return 2
}

// serveLeaky is a stdio MCP server that shows its secrets everywhere it
// can: on stderr at start, in a tool's error, and on stderr as it dies
// mid-call. It reads them from $API_KEY and $SERVICE_PASSWORD.
func serveLeaky() int {
	key, pw := os.Getenv("API_KEY"), os.Getenv("SERVICE_PASSWORD")
	fmt.Fprintf(os.Stderr, "leaky: starting with key %s and password %q\n", key, pw)
	s := mcp.NewServer(&mcp.Implementation{Name: "leaky", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "fail", Description: "Fail, naming the credentials used.", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
				Text: fmt.Sprintf("upstream refused key %s (password %s)", key, pw)}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "crash", Description: "Die mid-call after printing the credentials.", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fmt.Fprintf(os.Stderr, "leaky: panic: bad credentials key=%s password=%s\n", key, pw)
			time.Sleep(50 * time.Millisecond)
			os.Exit(9)
			return nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		return 1
	}
	return 0
}

// serveNotes is a stdio MCP server of three note tools. A tool's
// description is $NOTES_DESCRIPTION_<tool name> when that is set.
func serveNotes() int {
	s := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	for _, tool := range []struct{ name, desc string }{
		{"create_note", "Write a new note with a title and a body."},
		{"search_notes", "Find notes whose title or body contains the words given."},
		{"delete_note", "Delete a note for ever."},
	} {
		if d := os.Getenv("NOTES_DESCRIPTION_" + tool.name); d != "" {
			tool.desc = d
		}
		s.AddTool(&mcp.Tool{Name: tool.name, Description: tool.desc, InputSchema: map[string]any{"type": "object"}},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: tool.name + " done"}}}, nil
			})
	}
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		return 1
	}
	return 0
}

// roleServer is a config entry that runs the test binary as a role.
func roleServer(t testing.TB, role string) map[string]any {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return map[string]any{"command": exe, "env": map[string]string{roleEnv: role}}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// addrRE finds the address in serve's "serving streamable HTTP" log line,
// in text form (addr=…) or, with --log-format json, in JSON ("addr":"…").
var addrRE = regexp.MustCompile(`serving streamable HTTP.*?(?: addr=(\S+)|"addr":"([^"]+)")`)

// waitAddr waits for serve's log to say where it listens.
func waitAddr(t *testing.T, log interface{ String() string }, exited <-chan int) string {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		if m := addrRE.FindStringSubmatch(log.String()); m != nil {
			return m[1] + m[2]
		}
		select {
		case code := <-exited:
			t.Fatalf("serve exited with %d before listening:\n%s", code, log.String())
		case <-deadline:
			t.Fatalf("serve did not listen within 60s:\n%s", log.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// lineWatcher copies r into a buffer and lets a test wait for a line.
type lineWatcher struct {
	syncBuffer
}

func watchLines(r io.Reader, tee io.Writer) *lineWatcher {
	w := &lineWatcher{}
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text() + "\n"
			w.Write([]byte(line))
			if tee != nil {
				io.WriteString(tee, line)
			}
		}
	}()
	return w
}
