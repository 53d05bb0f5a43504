package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/upstream"
	"github.com/toolsearch/toolsearch/internal/redistest"
)

// readBack returns r's body and leaves it readable.
func readBack(r *http.Request) string {
	if r.Body == nil {
		return ""
	}
	b, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	return string(b)
}

// isAnswer reports whether a POST body is the client's answer to a
// request (a JSON-RPC response), not a request or notification.
func isAnswer(body string) bool {
	return strings.Contains(body, `"result"`) && !strings.Contains(body, `"method"`) ||
		strings.Contains(body, `"error"`) && !strings.Contains(body, `"method"`)
}

// TestClusterAnswersReachTheAsker: a load balancer that is not sticky
// sends the client's answer to a server-to-client request to another
// replica than the one that asked. Two calls run at once, one on each
// replica, each asking the client something (an elicitation on a, a
// sampling request on b), and each answer is posted to the other replica:
// each call still gets its own answer. The two replicas' sessions number
// their requests alike, so this holds only because each request leaves
// under its replica's own id.
func TestClusterAnswersReachTheAsker(t *testing.T) {
	t.Parallel()
	// The forwarder asks within its calls as a 2025-11-25 server does.
	f := newShareFixtureWith(t, "ask", func(fwd map[string]any) { fwd["protocolVersion"] = upstream.LegacyProtocol })
	rt := &router{}
	var crossed atomic.Int64
	rt.route(func(r *http.Request) string {
		body := readBack(r)
		switch {
		case r.Method != http.MethodPost:
			return f.hostA
		case strings.Contains(body, "ask_sample"):
			return f.hostB
		case isAnswer(body) && strings.Contains(body, `"action"`): // the elicitation's
			crossed.Add(1)
			return f.hostB
		case isAnswer(body) && strings.Contains(body, `"model"`): // the sampling's
			crossed.Add(1)
			return f.hostA
		}
		return f.hostA
	})
	// Each handler waits for the other request, so that both are
	// awaiting their answer at once.
	var both sync.WaitGroup
	both.Add(2)
	var pair atomic.Bool
	meet := func() bool {
		if !pair.Load() {
			return true
		}
		both.Done()
		done := make(chan struct{})
		go func() { both.Wait(); close(done) }()
		select {
		case <-done:
			return true
		case <-time.After(15 * time.Second):
			return false
		}
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "asked", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if !meet() {
				t.Error("the sampling request never came while the elicitation waited")
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ann"}}, nil
		},
		//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			if !meet() {
				t.Error("the elicitation never came while the sampling request waited")
			}
			//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
			return &mcp.CreateMessageResult{Model: "m-7", Role: "assistant", Content: &mcp.TextContent{Text: "otter"}}, nil
		},
	})
	cs := connectVia(t, cl, f.hostA, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// a asked for the client's roots after initialize; b asks once too,
	// so that each replica's next request has the same number.
	if got := sharedCall(t, cs, &mcp.CallToolParams{Name: callToolName, Arguments: map[string]any{"name": "fwd__ask_sample", "arguments": map[string]any{}}}); got != "sampled otter from m-7" {
		t.Fatalf("ask_sample on b alone: %q", got)
	}
	pair.Store(true)
	results := make(chan string, 2)
	for _, tool := range []string{"fwd__ask_elicit", "fwd__ask_sample"} {
		go func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: callToolName, Arguments: map[string]any{"name": tool, "arguments": map[string]any{}}})
			switch {
			case err != nil:
				results <- tool + ": " + err.Error()
			case len(res.Content) == 0:
				results <- tool + ": no content"
			default:
				tc, _ := res.Content[0].(*mcp.TextContent)
				results <- tool + ": " + tc.Text
			}
		}()
	}
	var got []string
	for range 2 {
		got = append(got, <-results)
	}
	slices.Sort(got)
	want := []string{"fwd__ask_elicit: accept Ann", "fwd__ask_sample: sampled otter from m-7"}
	if !slices.Equal(got, want) {
		t.Errorf("the calls returned %q, want %q", got, want)
	}
	if crossed.Load() != 3 {
		t.Errorf("%d answers went to the other replica, want 3", crossed.Load())
	}
	// An answer to a request no replica made is dropped, not delivered
	// to a call.
	if st, _ := rawSessionPost(t, f.hostB, cs.ID(), `{"jsonrpc":"2.0","id":"ts.000000000000.1","result":{}}`); st != http.StatusAccepted {
		t.Errorf("a stray answer: %d, want 202", st)
	}
}

// twoServing starts replicas a and b of the cluster configuration at
// path, waits for both to have the upstream server ready and serves each
// over HTTP, returning their hosts.
func twoServing(t *testing.T, path, server string) (hostA, hostB string) {
	t.Helper()
	a := newReplica(t, path, "a", true, false)
	b := newReplica(t, path, "b", true, false)
	waitState(t, a.g, server, 20*time.Second, StateReady)
	waitState(t, b.g, server, 20*time.Second, StateReady)
	hostA, _ = serveKillable(t, a.g.Handler(""))
	hostB, _ = serveKillable(t, b.g.Handler(""))
	return hostA, hostB
}

// TestClusterRootsOnAnotherReplicasStream: the gateway asks a client for
// its roots after initialize, outside any of the client's requests, so on
// the event stream; the client's stream is on replica b, the session
// began on a, and the client posts its answer to b. The request reaches
// the client through b, the answer reaches a, and the first list has the
// file tools of a client with roots, which then work in its root.
func TestClusterRootsOnAnotherReplicasStream(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	path := clusterConfig(t, map[string]any{"echo": roleServer(t, "echo")}, srv.URL(0), "roots",
		map[string]any{"exposure": "full", "builtins": map[string]any{"lsp": false}})
	hostA, hostB := twoServing(t, path, "echo")
	rt := &router{}
	var answers atomic.Int64
	rt.route(func(r *http.Request) string {
		if r.Method == http.MethodGet {
			return hostB
		}
		if isAnswer(readBack(r)) {
			answers.Add(1)
			return hostB
		}
		return hostA
	})
	root := workspace(t)
	if err := os.WriteFile(filepath.Join(root, "only_here.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cl, c := newClient(nil)
	//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
	cl.AddRoots(&mcp.Root{URI: "file://" + filepath.ToSlash(root), Name: "ws"})
	c.cs = connectVia(t, cl, hostA, rt)
	start := time.Now()
	names := c.toolNames(t)
	if !contains(names, "builtin__glob") {
		t.Fatalf("the first list lacks the file tools of a client with roots (after %v): %v", time.Since(start), names)
	}
	if d := time.Since(start); d >= rootsTimeout {
		t.Errorf("the first list waited %v: the roots answer did not come back", d)
	}
	if answers.Load() == 0 {
		t.Error("no answer went to b")
	}
	text, isErr := c.call(t, "builtin__glob", map[string]any{"pattern": "*.go"})
	if isErr || !strings.Contains(text, "only_here.go") {
		t.Errorf("glob in the client's root = %q, %v", text, isErr)
	}
}

// TestClusterStreamResumesOnAnotherReplica: the client's event stream is
// on replica a, which dies. While the client reconnects, replica b has a
// resource update for it, which no replica can deliver. The client's
// stream resumes on b with the Last-Event-ID a gave it, and b replays the
// update from the cluster: nothing sent meanwhile is lost.
func TestClusterStreamResumesOnAnotherReplica(t *testing.T) {
	t.Parallel()
	f := newShareFixture(t, "resume")
	rt := &router{}
	hold := make(chan struct{})
	var toA atomic.Bool
	toA.Store(true)
	var held atomic.Int64
	rt.route(func(r *http.Request) string {
		if r.Method != http.MethodGet {
			return f.hostB
		}
		if toA.Load() {
			return f.hostA
		}
		held.Add(1)
		<-hold // the client is reconnecting
		return f.hostB
	})
	c := connectShared(t, f.hostB, rt)
	id := c.cs.ID()
	ctx := context.Background()
	if err := c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "cache://alpha/doc"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the event stream open on a", 10*time.Second, func() bool {
		hsn := f.a.g.httpSessionTable().lookup(id)
		return hsn != nil && hsn.s.share != nil && hsn.s.share.tr.gets.Load() > 0
	})
	// A first update, delivered live through a.
	waitFor(t, "a live update through a", 15*time.Second, func() bool {
		f.updB("cache://alpha/doc")
		_, updated, _ := c.seen()
		return len(updated) > 0
	})
	time.Sleep(300 * time.Millisecond) // any other update on its way
	_, before, _ := c.seen()

	toA.Store(false)
	f.killA()
	waitFor(t, "a's stream gone and the client reconnecting", 15*time.Second, func() bool {
		chans, _ := redis.Strings(f.srv.Do("PUBSUB", "CHANNELS", "resume:stream:*"))
		return held.Load() > 0 && len(chans) == 0
	})
	f.updB("cache://alpha/doc")
	time.Sleep(300 * time.Millisecond) // b has kept it: no replica holds the stream
	if _, now, _ := c.seen(); len(now) != len(before) {
		t.Fatalf("an update reached the client with no stream open: %d, then %d", len(before), len(now))
	}
	close(hold)
	waitFor(t, "the update sent while away, replayed by b", 15*time.Second, func() bool {
		_, updated, _ := c.seen()
		return len(updated) > len(before)
	})
	time.Sleep(300 * time.Millisecond) // nothing more should come
	_, after, _ := c.seen()
	if n := len(after) - len(before); n != 1 {
		t.Errorf("%d updates after the reconnection, want the one sent while away", n)
	}
	var m bytes.Buffer
	f.b.c.WriteMetrics(&m)
	if strings.Contains(m.String(), `toolsearch_cluster_events_replayed_total{replica="b"} 0`) {
		t.Errorf("b replayed nothing from the cluster:\n%s", m.String())
	}
}

// TestClusterSSEPollingAcrossReplicas: an upstream that polls (it ends its
// stream with a retry field and answers later) is called through replica
// a, whose stream to the client is primed with an event id and ends with
// the same retry; the client's reconnection, with the Last-Event-ID a gave
// it, reaches replica b, which replays the answer from the cluster once a
// has it.
func TestClusterSSEPollingAcrossReplicas(t *testing.T) {
	t.Parallel()
	s := mcp.NewServer(&mcp.Implementation{Name: "poller", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "slow_report", Description: "Build a slow report, ending the stream first.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 100 * time.Millisecond})
			time.Sleep(300 * time.Millisecond)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "report ready"}}}, nil
		})
	up := serveHTTP(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)}))
	srv := redistest.Start(t)
	path := clusterConfig(t, map[string]any{"poller": map[string]any{"type": "http", "url": up.URL, "naming": "bare"}}, srv.URL(0), "poll",
		map[string]any{"exposure": "full"})
	hostA, hostB := twoServing(t, path, "poller")

	sid, version := rawInitialize(t, "http://"+hostA+"/mcp")
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow_report","arguments":{}}}`
	req, _ := http.NewRequest(http.MethodPost, "http://"+hostA+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", version)
	evs, retried, lastID := readEvents(t, req)
	if !retried || lastID == "" || strings.Contains(strings.Join(evs, "\n"), "report ready") {
		t.Fatalf("a's stream: retry %v, last id %q, events %q; want it ended with a retry before the answer", retried, lastID, evs)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		get, _ := http.NewRequest(http.MethodGet, "http://"+hostB+"/mcp", nil)
		get.Header.Set("Accept", "text/event-stream")
		get.Header.Set("Mcp-Session-Id", sid)
		get.Header.Set("Mcp-Protocol-Version", version)
		get.Header.Set("Last-Event-ID", lastID)
		evs, _, _ = readEvents(t, get)
		if strings.Contains(strings.Join(evs, "\n"), "report ready") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b never replayed the answer: last events %q", evs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
