//go:build linux

package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServeReloadsOnSIGHUP builds toolsearch, serves the npm memory
// server and a Go notes server, over stdio and over HTTP, and sends the
// real process SIGHUP twice: first with a config that has an unknown key,
// which is refused with a log line naming the key while the old config
// keeps serving; then with one that removes the notes server and adds
// another. The client's session carries on, is told with list_changed,
// and sees the new list; the memory server, unchanged, is not restarted.
// (Linux only, as npmBin is; SIGHUP itself works on every Unix.)
func TestServeReloadsOnSIGHUP(t *testing.T) {
	t.Parallel()
	memory := npmBin(t, "mcp-server-memory")
	bin := toolsearchBinary(t)
	for _, overHTTP := range []bool{false, true} {
		name := map[bool]string{false: "stdio", true: "http"}[overHTTP]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			mem := map[string]any{"command": memory, "env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(dir, "memory.jsonl")}}
			cfgPath := filepath.Join(dir, "ts.json")
			writeConfigJSON(t, cfgPath, map[string]any{"mcpServers": map[string]any{"memory": mem, "notes": roleServer(t, "notes")}})

			args := []string{"serve", "-c", cfgPath, "--state-dir", filepath.Join(dir, "state"), "--exposure", "full", "--log-level", "info"}
			if overHTTP {
				args = append(args, "--http", "127.0.0.1:0")
			}
			cmd := exec.Command(bin, args...)
			cmd.Dir = dir
			stdin, _ := cmd.StdinPipe()
			stdout, _ := cmd.StdoutPipe()
			stderr, _ := cmd.StderrPipe()
			var tee io.Writer
			if testing.Verbose() {
				tee = os.Stderr
			}
			logs := watchLines(stderr, tee)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waited := make(chan error, 1)
			go func() { waited <- cmd.Wait() }()
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				select {
				case <-waited:
				case <-time.After(10 * time.Second):
				}
			})

			var changed atomic.Int32
			cl := mcp.NewClient(&mcp.Implementation{Name: "reload-test", Version: "1"}, &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed.Add(1) }})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var transport mcp.Transport = &mcp.IOTransport{Reader: stdout, Writer: stdin}
			if overHTTP {
				transport = &mcp.StreamableClientTransport{Endpoint: "http://" + waitAddr(t, logs, nil) + "/mcp"}
			}
			cs, err := cl.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatalf("connect: %v\n%s", err, logs.String())
			}
			defer cs.Close()
			list := func() []string {
				var names []string
				for tool, err := range cs.Tools(ctx, nil) {
					if err != nil {
						t.Fatalf("tools/list: %v", err)
					}
					names = append(names, tool.Name)
				}
				return names
			}
			waitUntil := func(what string, f func() bool) {
				t.Helper()
				for deadline := time.Now().Add(30 * time.Second); !f(); time.Sleep(50 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("timed out waiting for %s; log:\n%s", what, logs.String())
					}
				}
			}
			waitUntil("both servers' tools", func() bool {
				names := list()
				return slices.Contains(names, "notes__create_note") && slices.Contains(names, "memory__read_graph")
			})
			hup := func() {
				if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
					t.Fatal(err)
				}
			}

			// A bad config is refused; the old one keeps serving.
			os.WriteFile(cfgPath, []byte(`{"mcpServers": {"memory": {"comand": "x"}}}`), 0o600)
			hup()
			waitUntil("the refusal", func() bool { return strings.Contains(logs.String(), "config reload refused") })
			if l := logs.String(); !strings.Contains(l, `unknown key \"comand\"`) && !strings.Contains(l, `unknown key "comand"`) {
				t.Errorf("the refusal does not name the key:\n%s", l)
			}
			if names := list(); !slices.Contains(names, "notes__create_note") {
				t.Errorf("after a refused reload the list is %v", names)
			}

			// A good one applies: notes goes, jotter comes, memory stays.
			before := changed.Load()
			writeConfigJSON(t, cfgPath, map[string]any{"mcpServers": map[string]any{"memory": mem, "jotter": roleServer(t, "notes")}})
			hup()
			waitUntil("the reload", func() bool { return strings.Contains(logs.String(), "config reloaded") })
			waitUntil("list_changed", func() bool { return changed.Load() > before })
			waitUntil("the new list", func() bool {
				names := list()
				return slices.Contains(names, "jotter__create_note") && !slices.Contains(names, "notes__create_note") &&
					slices.Contains(names, "memory__read_graph")
			})
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "jotter__create_note", Arguments: map[string]any{}})
			if err != nil || res.IsError {
				t.Errorf("calling the added server's tool: %v %+v", err, res)
			}
			if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory__read_graph", Arguments: map[string]any{}}); err != nil || res.IsError {
				t.Errorf("calling the unchanged server's tool: %v %+v", err, res)
			}
			if n := strings.Count(logs.String(), `msg="upstream ready" server=memory`); n != 1 {
				t.Errorf("the unchanged memory server came up %d times, want once; log:\n%s", n, logs.String())
			}

			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-waited:
				if err != nil {
					t.Errorf("serve exited with %v after SIGTERM", err)
				}
			case <-time.After(30 * time.Second):
				t.Error("serve did not exit within 30s of SIGTERM")
			}
		})
	}
}
