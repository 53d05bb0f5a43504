package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/upstream"
)

// TestUpstreamNegotiation: each server ends up at the newest version both
// sides speak, and status says which: 2026-07-28 for Go SDK servers over
// stdio and over stateless HTTP; 2025-11-25 for a stateful HTTP handler
// (which refuses 2026-07-28), for the npm servers (TypeScript SDK), and for
// a server pinned to it. Every one of them lists and answers calls.
func TestUpstreamNegotiation(t *testing.T) {
	t.Parallel()
	modernURL, _ := modernHTTP(t)
	stateful := modernServer()
	statefulURL := serveHTTP(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return stateful }, nil)).URL
	pinned := roleServer(t, "modern")
	pinned["protocolVersion"] = upstream.LegacyProtocol
	cases := []struct {
		name   string
		server func(t *testing.T) map[string]any
		want   string
		tool   string // a tool to call, with no arguments needed
	}{
		{"go stdio", func(t *testing.T) map[string]any { return roleServer(t, "modern") }, upstream.LatestProtocol, "touch"},
		{"go stateless http", func(*testing.T) map[string]any { return map[string]any{"type": "http", "url": modernURL} }, upstream.LatestProtocol, "touch"},
		{"go stateful http", func(*testing.T) map[string]any { return map[string]any{"type": "http", "url": statefulURL} }, upstream.LegacyProtocol, "touch"},
		{"go stdio pinned", func(*testing.T) map[string]any { return pinned }, upstream.LegacyProtocol, "touch"},
		{"npm memory", func(t *testing.T) map[string]any {
			return map[string]any{"command": npmBin(t, "mcp-server-memory"), "env": map[string]string{"MEMORY_FILE_PATH": t.TempDir() + "/m.jsonl"}}
		}, upstream.LegacyProtocol, "read_graph"},
		{"npm everything", func(t *testing.T) map[string]any {
			return map[string]any{"command": npmBin(t, "mcp-server-everything")}
		}, upstream.LegacyProtocol, "get-sum"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			g := startGateway(t, writeConfig(t, map[string]any{"up": c.server(t)}, nil))
			st := waitState(t, g, "up", 30*time.Second, StateReady)
			if st.Protocol != c.want {
				t.Errorf("protocol %q, want %q", st.Protocol, c.want)
			}
			if st.Tools == 0 {
				t.Errorf("no tools listed")
			}
			if cache, ok := g.UpstreamCache("up"); !ok || cache.Protocol != c.want {
				t.Errorf("UpstreamCache = %+v, %v", cache, ok)
			}
			args := json.RawMessage(`{}`)
			if c.tool == "get-sum" {
				args = json.RawMessage(`{"a":2,"b":3}`)
			}
			res := g.call(context.Background(), nil, c.tool, args)
			if res.IsError {
				t.Errorf("calling %s: %s", c.tool, resultText(res))
			}
		})
	}
}

// TestUpstreamDeafToDiscover: a server that never answers server/discover
// costs one start timeout: the next start asks for 2025-11-25, and the
// server is ready at that version; a pinned server is asked for its
// version from the start. The start timeout bounds the second start too,
// so it is a few seconds: a start on a busy machine can take more than one.
func TestUpstreamDeafToDiscover(t *testing.T) {
	t.Parallel()
	pinned := roleServer(t, "deaf-to-discover")
	pinned["protocolVersion"] = upstream.LegacyProtocol
	deaf := roleServer(t, "deaf-to-discover")
	deaf["startTimeout"] = "5s"
	g := startGateway(t, writeConfig(t, map[string]any{"deaf": deaf, "pinned": pinned}, nil))
	if st := waitState(t, g, "pinned", 30*time.Second, StateReady); st.Protocol != upstream.LegacyProtocol || st.Restarts != 0 {
		t.Errorf("pinned: %+v", st)
	}
	waitState(t, g, "deaf", 30*time.Second, StateFailed, StateRestarting)
	st := waitState(t, g, "deaf", 60*time.Second, StateReady)
	if st.Protocol != upstream.LegacyProtocol || st.Restarts != 1 {
		t.Errorf("deaf: protocol %q after %d restarts, want %s after 1", st.Protocol, st.Restarts, upstream.LegacyProtocol)
	}
	if res := g.call(context.Background(), nil, "deaf__hello", nil); res.IsError || resultText(res) != "hello" {
		t.Errorf("deaf__hello = %q", resultText(res))
	}
}

// TestUpstreamCacheHints: the gateway keeps what a server's list results
// said about caching them (ttlMs, cacheScope), per list, whatever version
// it speaks (the Go SDK says it on 2025-11-25 too); a server that says
// nothing (the npm servers) has zero hints; a list_changed marks the list
// stale until it is listed again.
func TestUpstreamCacheHints(t *testing.T) {
	t.Parallel()
	pinned := roleServer(t, "modern")
	pinned["protocolVersion"] = upstream.LegacyProtocol
	servers := map[string]any{"modern": roleServer(t, "modern"), "pinned": pinned}
	haveNPM := npmPresent(t, "mcp-server-everything")
	if haveNPM {
		servers["npm"] = map[string]any{"command": npmBin(t, "mcp-server-everything")}
	}
	g := startGateway(t, writeConfig(t, servers, nil))
	for k := range servers {
		waitState(t, g, k, 30*time.Second, StateReady)
	}
	all := g.UpstreamCaches()
	type row struct {
		name      string
		got       ListCache
		ttl       time.Duration
		scope     string
		wantFresh bool
	}
	rows := []row{
		{"modern tools", all["modern"].Tools, 30 * time.Second, "public", true},
		{"modern resources", all["modern"].Resources, 30 * time.Second, "public", true},
		{"modern prompts", all["modern"].Prompts, 2 * time.Minute, "private", true},
		{"pinned tools", all["pinned"].Tools, 30 * time.Second, "public", true},
		{"pinned prompts", all["pinned"].Prompts, 2 * time.Minute, "private", true},
	}
	if haveNPM {
		rows = append(rows, row{"npm tools", all["npm"].Tools, 0, "", false}, row{"npm prompts", all["npm"].Prompts, 0, "", false})
	} else {
		t.Log("the npm servers are absent (npm ci): the rows of a server that says nothing are skipped")
	}
	for _, c := range rows {
		if c.got.TTL != c.ttl || c.got.Scope != c.scope || c.got.ListedAt.IsZero() || c.got.Stale {
			t.Errorf("%s: %+v, want ttl %v scope %q, listed, not stale", c.name, c.got, c.ttl, c.scope)
		}
		if fresh := c.got.Fresh(time.Now()); fresh != c.wantFresh {
			t.Errorf("%s: fresh %v, want %v", c.name, fresh, c.wantFresh)
		}
	}
	if _, ok := g.UpstreamCache("nope"); ok {
		t.Error("UpstreamCache of a server that is not configured")
	}
	m := all["modern"]

	// list_changed: stale at once, listed again soon after.
	u := g.ups()["modern"]
	before := m.Tools.ListedAt
	u.MarkStale(upstream.ListTools)
	if c, _ := g.UpstreamCache("modern"); !c.Tools.Stale || c.Tools.Fresh(time.Now()) || c.Prompts.Stale {
		t.Errorf("after list_changed: tools %+v, prompts %+v", c.Tools, c.Prompts)
	}
	if res := g.call(context.Background(), nil, "modern__grow", json.RawMessage(`{"name":"frob"}`)); res.IsError {
		t.Fatal(resultText(res))
	}
	waitFor(t, "the tools to be listed again", 10*time.Second, func() bool {
		c, _ := g.UpstreamCache("modern")
		return !c.Tools.Stale && c.Tools.ListedAt.After(before)
	})
}

// TestUpstreamListen: a 2026-07-28 server's changes reach the gateway over
// subscriptions/listen, over stdio and stateless HTTP: a tool it adds is
// listed, a resource a client subscribed to tells the client when it
// changes; and after the server restarts, the gateway listens again.
func TestUpstreamListen(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			up := roleServer(t, "modern")
			if transport == "http" {
				u, _ := modernHTTP(t)
				up = map[string]any{"type": "http", "url": u}
			}
			g := startGateway(t, writeConfig(t, map[string]any{"m": up}, nil))
			if st := waitState(t, g, "m", 20*time.Second, StateReady); st.Protocol != upstream.LatestProtocol {
				t.Fatalf("protocol %s", st.Protocol)
			}
			gw := serveHTTP(t, g.Handler("full"))
			c := connectFwdClient(t, gw.URL+"/mcp", true)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()

			grown := func(name string) {
				t.Helper()
				if got, isErr := c.call(t, "grow"); isErr && !strings.Contains(got, "name") {
					t.Logf("grow without a name: %s", got)
				}
				res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "grow", Arguments: map[string]any{"name": name}})
				if err != nil || res.IsError {
					t.Fatalf("grow: %v %v", err, res)
				}
				waitFor(t, "the new tool "+name+" in the gateway's list", 10*time.Second, func() bool {
					_, err := resolveTool(g, name)
					return err == nil
				})
			}
			grown("frob_one")

			if err := c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "watch://r"}); err != nil {
				t.Fatalf("subscribe: %v", err)
			}
			touched := func() {
				t.Helper()
				_, _, before := c.seen()
				c.call(t, "touch")
				waitFor(t, "notifications/resources/updated", 10*time.Second, func() bool {
					_, _, updated := c.seen()
					return len(updated) > len(before) && updated[len(updated)-1] == "watch://r"
				})
			}
			touched()

			if transport == "stdio" {
				restarts := g.ups()["m"].Status().Restarts
				c.call(t, "exit")
				waitFor(t, "the server to be restarted", 20*time.Second, func() bool {
					st := g.ups()["m"].Status()
					return st.Restarts > restarts && st.State == StateReady
				})
				grown("frob_two")
				touched()
			}
		})
	}
}

// TestUpstreamSubscribeWaitsForAck: a 2026-07-28 server subscribes on a
// subscriptions/listen stream, which the MCP library opens without waiting
// for it. The gateway answers a client's resources/subscribe once the
// server has acknowledged the subscription, so that an update right after
// it is not lost: here the server takes its time over the listen request,
// and a touch made as soon as the subscribe returns still reaches the
// client.
func TestUpstreamSubscribeWaitsForAck(t *testing.T) {
	t.Parallel()
	g := startGateway(t, writeConfig(t, map[string]any{"m": roleServer(t, "modern-slow-listen")}, nil))
	waitState(t, g, "m", 20*time.Second, StateReady)
	gw := serveHTTP(t, g.Handler("full"))
	c := connectFwdClient(t, gw.URL+"/mcp", true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "watch://r"}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	c.call(t, "touch")
	waitFor(t, "notifications/resources/updated", 5*time.Second, func() bool {
		_, _, updated := c.seen()
		return slices.Contains(updated, "watch://r")
	})
}

// TestInputRequiredPassthrough: a 2026-07-28 server's input_required result
// reaches a 2026-07-28 client as it came, by the tool's own name and
// through call_tool; the client's retry reaches the same server with the
// same requestState. A client whose SDK answers input requests by itself
// sees only the final results (elicitation, sampling, roots).
func TestInputRequiredPassthrough(t *testing.T) {
	t.Parallel()
	g := startGateway(t, writeConfig(t, map[string]any{"m": roleServer(t, "modern")}, nil))
	waitState(t, g, "m", 20*time.Second, StateReady)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	manual := connectModern(t, g, answering(false))
	for _, via := range []string{"native", "call_tool"} {
		t.Run(via, func(t *testing.T) {
			first := &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{}}
			if via == "call_tool" {
				first = &mcp.CallToolParams{Name: callToolName, Arguments: map[string]any{"name": "ask", "arguments": map[string]any{}}}
			}
			res, err := manual.CallTool(ctx, first)
			if err != nil {
				t.Fatal(err)
			}
			if !res.NeedsInput() || len(res.Content) != 0 {
				t.Fatalf("want input_required, got %+v (%s)", res, resultText(res))
			}
			ep, ok := res.InputRequests["name"].(*mcp.ElicitParams)
			if !ok || ep.Message != "Your name?" || len(res.InputRequests) != 1 {
				t.Fatalf("input requests %#v", res.InputRequests)
			}
			state := res.RequestState
			if !strings.HasPrefix(state, "ask-") {
				t.Fatalf("requestState %q is not the server's", state)
			}
			again := *first
			again.InputResponses = mcp.InputResponseMap{"name": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Grace"}}}
			again.RequestState = state
			res, err = manual.CallTool(ctx, &again)
			if err != nil {
				t.Fatal(err)
			}
			if want := "accept Grace state=" + state; res.NeedsInput() || resultText(res) != want {
				t.Errorf("retry = %q (needs input %v), want %q", resultText(res), res.NeedsInput(), want)
			}
		})
	}

	auto := connectModern(t, g, answering(true))
	for tool, want := range map[string]string{
		"ask":        "accept Ada state=ask-",
		"ask_sample": "sampled banana from test-model",
		"ask_roots":  "roots: file:///work/a",
	} {
		res, err := auto.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
		if err != nil || res.IsError || !strings.HasPrefix(resultText(res), want) {
			t.Errorf("%s = %v %v, want %q", tool, res, err, want)
			continue
		}
	}
}

// TestInputRequiredRetryAttacks: a retry goes only where its requestState
// came from. The gateway refuses, without calling any server, a state
// replayed against another tool of the same server or the same tool of
// another server, a forged state, a state another client got, a state used
// already, and over HTTP a state retried with other credentials.
func TestInputRequiredRetryAttacks(t *testing.T) {
	t.Parallel()
	g := startGateway(t, writeConfig(t, map[string]any{"m": roleServer(t, "modern"), "n": roleServer(t, "modern")}, nil))
	waitState(t, g, "m", 20*time.Second, StateReady)
	waitState(t, g, "n", 20*time.Second, StateReady)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	alice := connectModern(t, g, answering(false))
	mallory := connectModern(t, g, answering(false))
	answer := mcp.InputResponseMap{"name": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Eve"}}}

	// stateFrom makes a first call of m__ask for cs and returns its state.
	stateFrom := func(cs *mcp.ClientSession) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "m__ask", Arguments: map[string]any{}})
		if err != nil || !res.NeedsInput() {
			t.Fatalf("first call: %v %v", res, err)
		}
		return res.RequestState
	}
	// A retry's outcome: its result, or the JSON-RPC error it was refused
	// with.
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	retry := func(cs *mcp.ClientSession, tool, state string) outcome {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}, InputResponses: answer, RequestState: state})
		return outcome{res, err}
	}
	// refused: a JSON-RPC error of invalid params naming requestState, as
	// the server itself refuses a state it did not make; never sent on.
	refused := func(t *testing.T, o outcome) {
		t.Helper()
		var je *jsonrpc.Error
		if !errors.As(o.err, &je) || je.Code != jsonrpc.CodeInvalidParams || !strings.Contains(je.Message, "requestState") || strings.Contains(je.Message, "Eve") {
			t.Errorf("not refused: %v, %v", o.res, o.err)
		}
	}
	cases := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"another tool of the same server", func(t *testing.T) { refused(t, retry(alice, "m__ask_again", stateFrom(alice))) }},
		{"the same tool of another server", func(t *testing.T) { refused(t, retry(alice, "n__ask", stateFrom(alice))) }},
		{"through call_tool to another tool", func(t *testing.T) {
			s := stateFrom(alice)
			res, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: callToolName, InputResponses: answer, RequestState: s,
				Arguments: map[string]any{"name": "n__ask", "arguments": map[string]any{}}})
			refused(t, outcome{res, err})
		}},
		{"forged", func(t *testing.T) { refused(t, retry(alice, "m__ask", "ask-0123456789abcdef")) }},
		{"another client's", func(t *testing.T) { refused(t, retry(mallory, "m__ask", stateFrom(alice))) }},
		{"used already", func(t *testing.T) {
			s := stateFrom(alice)
			if o := retry(alice, "m__ask", s); o.err != nil || o.res.IsError || resultText(o.res) != "accept Eve state="+s {
				t.Fatalf("the rightful retry = %v, %v", o.res, o.err)
			}
			refused(t, retry(alice, "m__ask", s))
		}},
		{"the rightful retry", func(t *testing.T) {
			s := stateFrom(alice)
			if o := retry(alice, "m__ask", s); o.err != nil || o.res.IsError || resultText(o.res) != "accept Eve state="+s {
				t.Errorf("the rightful retry = %v, %v", o.res, o.err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, c.run)
	}

	// Over stateless HTTP, there is no session: a retry is bound to the
	// credentials of the first call.
	front := modernFrontHTTP(t, g)
	connect := func(token string) *mcp.ClientSession {
		t.Helper()
		hc := &http.Client{Transport: headerRoundTripper{h: http.Header{"Authorization": {"Bearer " + token}}}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-client", Version: "1"}, answering(false)).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: front, HTTPClient: hc}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeSession(t, cs) })
		return cs
	}
	a1, a2, b := connect("alice-token"), connect("alice-token"), connect("bob-token")
	t.Run("http other credentials", func(t *testing.T) { refused(t, retry(b, "m__ask", stateFrom(a1))) })
	t.Run("http same credentials", func(t *testing.T) {
		s := stateFrom(a1)
		if o := retry(a2, "m__ask", s); o.err != nil || o.res.IsError || resultText(o.res) != "accept Eve state="+s {
			t.Errorf("retry with the same credentials = %v, %v", o.res, o.err)
		}
	})
}

// TestInputRequiredPromptsAndResources: prompts/get and resources/read
// answered with input_required reach a 2026 client as they came, and the
// retry reaches the server with its state; a state replayed against
// another prompt, or by another client, is refused; a 2025 client is asked
// with elicitation/create and gets the final answer.
func TestInputRequiredPromptsAndResources(t *testing.T) {
	t.Parallel()
	g := startGateway(t, writeConfig(t, map[string]any{"m": roleServer(t, "modern")}, nil))
	waitState(t, g, "m", 20*time.Second, StateReady)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	answer := mcp.InputResponseMap{"name": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Grace"}}}

	// A modernFront serves no prompts or resources: these go through the
	// gateway's handlers (readResourceFor, getPromptFor) on a server of
	// the test's own.
	front := mcp.NewServer(&mcp.Implementation{Name: "toolsearch", Version: "test"}, nil)
	front.AddPrompt(&mcp.Prompt{Name: "ask_prompt"}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return g.getPromptFor(ctx, req, "m", "ask_prompt")
	})
	front.AddPrompt(&mcp.Prompt{Name: "ask_prompt_too"}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return g.getPromptFor(ctx, req, "m", "ask_prompt_too")
	})
	front.AddResource(&mcp.Resource{URI: "ask://secret", Name: "asked"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return g.readResourceFor(ctx, req, "m", req.Params.URI)
	})
	connect := func(opts *mcp.ClientOptions) *mcp.ClientSession {
		t.Helper()
		st, ct := mcp.NewInMemoryTransports()
		ss, err := front.Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ss.Close() })
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, opts).Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeSession(t, cs) })
		return cs
	}
	alice, mallory := connect(answering(false)), connect(answering(false))

	res, err := alice.GetPrompt(ctx, &mcp.GetPromptParams{Name: "ask_prompt"})
	if err != nil || !res.NeedsInput() || !strings.HasPrefix(res.RequestState, "ask_prompt-") || res.InputRequests["name"] == nil {
		t.Fatalf("first prompts/get: %+v %v", res, err)
	}
	state := res.RequestState
	if _, err := alice.GetPrompt(ctx, &mcp.GetPromptParams{Name: "ask_prompt_too", InputResponses: answer, RequestState: state}); err == nil || !strings.Contains(err.Error(), "requestState") {
		t.Errorf("a state replayed against another prompt: %v", err)
	}
	if _, err := mallory.GetPrompt(ctx, &mcp.GetPromptParams{Name: "ask_prompt", InputResponses: answer, RequestState: state}); err == nil || !strings.Contains(err.Error(), "requestState") {
		t.Errorf("another client's state: %v", err)
	}
	res, err = alice.GetPrompt(ctx, &mcp.GetPromptParams{Name: "ask_prompt", InputResponses: answer, RequestState: state})
	if err != nil || res.NeedsInput() || len(res.Messages) != 1 || res.Messages[0].Content.(*mcp.TextContent).Text != "hello Grace state="+state {
		t.Errorf("the retry: %+v %v", res, err)
	}

	rr, err := alice.ReadResource(ctx, &mcp.ReadResourceParams{URI: "ask://secret"})
	if err != nil || !rr.NeedsInput() || !strings.HasPrefix(rr.RequestState, "read-") {
		t.Fatalf("first resources/read: %+v %v", rr, err)
	}
	rr2, err := alice.ReadResource(ctx, &mcp.ReadResourceParams{URI: "ask://secret", InputResponses: answer, RequestState: rr.RequestState})
	if err != nil || rr2.NeedsInput() || len(rr2.Contents) != 1 || rr2.Contents[0].Text != "for Grace state="+rr.RequestState {
		t.Errorf("the read's retry: %+v %v", rr2, err)
	}

	// A 2025 client, through the gateway's own endpoint.
	gw := serveHTTP(t, g.Handler("full"))
	old := connectFwdClient(t, gw.URL+"/mcp", true)
	pr, err := old.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "ask_prompt"})
	if err != nil || len(pr.Messages) != 1 || !strings.HasPrefix(pr.Messages[0].Content.(*mcp.TextContent).Text, "hello Ada state=ask_prompt-") {
		t.Errorf("a 2025 client's prompts/get: %+v %v", pr, err)
	}
	rd, err := old.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "ask://secret"})
	if err != nil || len(rd.Contents) != 1 || !strings.HasPrefix(rd.Contents[0].Text, "for Ada state=read-") {
		t.Errorf("a 2025 client's resources/read: %+v %v", rd, err)
	}
}

// headerRoundTripper adds headers to every request.
type headerRoundTripper struct{ h http.Header }

func (rt headerRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range rt.h {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestEraTranslation2025Client: a 2026-07-28 server's input requests reach
// a 2025-11-25 client as the requests of its era (elicitation/create,
// sampling/createMessage, roots/list), and the server gets the answers; a
// client without the capability gets a clear error, and no roots.
func TestEraTranslation2025Client(t *testing.T) {
	t.Parallel()
	g := startGateway(t, writeConfig(t, map[string]any{"m": roleServer(t, "modern")}, nil))
	waitState(t, g, "m", 20*time.Second, StateReady)
	gw := serveHTTP(t, g.Handler("full"))
	capable := connectFwdClient(t, gw.URL+"/mcp", true)
	plain := connectFwdClient(t, gw.URL+"/mcp", false)
	for _, c := range []struct {
		client  *fwdClient
		tool    string
		want    string
		wantErr bool
	}{
		{capable, "ask", "accept Ada state=ask-", false},
		{capable, "ask_sample", "sampled banana from test-model", false},
		{capable, "ask_roots", "roots: file:///work/a", false},
		{plain, "ask", "does not support elicitation", true},
		{plain, "ask_sample", "does not support sampling", true},
		{plain, "ask_roots", "roots: ", false},
	} {
		got, isErr := c.client.call(t, c.tool)
		if isErr != c.wantErr || !strings.Contains(got, c.want) {
			t.Errorf("%s = %q (error %v), want %q (error %v)", c.tool, got, isErr, c.want, c.wantErr)
		}
	}
}

// TestEraTranslation2026Client: a 2025-11-25 server's own requests, made
// while it serves a 2026-07-28 client's call, reach the client as
// input_required results with a state of the gateway's; the client's retry
// answers the held request and gets the server's result. A client that
// does not retry in time gets nothing more: the held request is cancelled
// and its state refused. The client's _meta reaches the server without the
// protocol's own keys, which would make a 2025 server read the call as a
// 2026 one.
func TestEraTranslation2026Client(t *testing.T) {
	t.Parallel()
	fw := roleServer(t, "forwarder")
	fw["protocolVersion"] = upstream.LegacyProtocol
	g := startGateway(t, writeConfig(t, map[string]any{"fw": fw}, nil))
	waitState(t, g, "fw", 20*time.Second, StateReady)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	auto := connectModern(t, g, answering(true))
	for tool, want := range map[string]string{
		"ask_sample":  "sampled banana from test-model",
		"ask_elicit":  "accept Ada",
		"ask_roots":   "roots: file:///work/a",
		"ping_client": "pong",
	} {
		res, err := auto.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
		if err != nil || resultText(res) != want {
			t.Errorf("%s = %v %v, want %q", tool, res, err, want)
		}
	}
	res, err := auto.CallTool(ctx, &mcp.CallToolParams{Name: "meta_echo", Arguments: map[string]any{}, Meta: mcp.Meta{"trace": "t-42"}})
	if err != nil || resultText(res) != "trace=t-42" {
		t.Errorf("meta_echo = %v %v", res, err)
	}

	// A 2026 client without the capabilities: the server is told so.
	plain := connectModern(t, g, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	for tool, want := range map[string]string{"ask_sample": "does not support sampling", "ask_elicit": "does not support elicitation", "ask_roots": "roots: "} {
		res, err := plain.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
		if err != nil || res.NeedsInput() || !strings.Contains(resultText(res), want) {
			t.Errorf("%s from a client without the capability = %v %v, want %q", tool, res, err, want)
		}
	}

	manual := connectModern(t, g, answering(false))
	res, err = manual.CallTool(ctx, &mcp.CallToolParams{Name: callToolName, Arguments: map[string]any{"name": "ask_elicit"}})
	if err != nil || !res.NeedsInput() {
		t.Fatalf("want input_required, got %v %v", res, err)
	}
	if !strings.HasPrefix(res.RequestState, heldStatePrefix) || len(res.InputRequests) != 1 {
		t.Fatalf("state %q, requests %v", res.RequestState, res.InputRequests)
	}
	var key string
	for k, r := range res.InputRequests {
		if ep, ok := r.(*mcp.ElicitParams); !ok || ep.Message != "Your name?" {
			t.Fatalf("input request %#v", r)
		}
		key = k
	}
	state := res.RequestState
	// Another client cannot answer it; a wrong answer is refused and the
	// request still waits.
	if res, err := auto.CallTool(ctx, &mcp.CallToolParams{Name: "ask_elicit", Arguments: map[string]any{}, RequestState: state,
		InputResponses: mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Eve"}}}}); err == nil || !strings.Contains(err.Error(), "requestState") {
		t.Errorf("another client's retry = %v, %v", res, err)
	}
	if res, _ := manual.CallTool(ctx, &mcp.CallToolParams{Name: callToolName, Arguments: map[string]any{"name": "ask_elicit"}, RequestState: state,
		//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
		InputResponses: mcp.InputResponseMap{key: &mcp.ListRootsResult{Roots: []*mcp.Root{}}}}); !res.IsError || !strings.Contains(resultText(res), "cannot be answered") {
		t.Errorf("a roots answer to an elicitation = %q", resultText(res))
	}
	if n := g.metrics.CallCount("fw", "invalid_arguments"); n != 1 {
		t.Errorf("calls counted as invalid_arguments after a retry that does not answer: %v, want 1", n)
	}
	res, err = manual.CallTool(ctx, &mcp.CallToolParams{Name: callToolName, Arguments: map[string]any{"name": "ask_elicit"}, RequestState: state,
		InputResponses: mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Grace"}}}})
	if err != nil || res.NeedsInput() || resultText(res) != "accept Grace" {
		t.Errorf("retry = %v %v", res, err)
	}

	// Not answered in time.
	g.fwd.mrtr.mu.Lock()
	g.fwd.mrtr.hold = 200 * time.Millisecond
	g.fwd.mrtr.mu.Unlock()
	res, err = manual.CallTool(ctx, &mcp.CallToolParams{Name: "ask_elicit", Arguments: map[string]any{}})
	if err != nil || !res.NeedsInput() {
		t.Fatalf("want input_required, got %v %v", res, err)
	}
	waitFor(t, "the held call to be dropped", 5*time.Second, func() bool {
		g.fwd.mrtr.mu.Lock()
		defer g.fwd.mrtr.mu.Unlock()
		_, held := g.fwd.mrtr.held[res.RequestState]
		return !held
	})
	late, err := manual.CallTool(ctx, &mcp.CallToolParams{Name: "ask_elicit", Arguments: map[string]any{}, RequestState: res.RequestState,
		InputResponses: mcp.InputResponseMap{"x": &mcp.ElicitResult{Action: "accept"}}})
	if err == nil || !strings.Contains(err.Error(), "requestState") {
		t.Errorf("a late retry = %v %v", late, err)
	}
	// The server's call ended: it answers the next one.
	if got, err := auto.CallTool(ctx, &mcp.CallToolParams{Name: "counters", Arguments: map[string]any{}}); err != nil || got.IsError {
		t.Errorf("counters after the timeout: %v %v", got, err)
	}
}

// TestUpstreamHeaders: over streamable HTTP at 2026-07-28 the SDK sends
// Mcp-Method and Mcp-Name with the server's own tool name, and an
// x-mcp-header parameter as its Mcp-Param header, though the gateway serves
// the tool under a prefixed name (and through call_tool) and validates its
// arguments; the schema clients see keeps x-mcp-header.
func TestUpstreamHeaders(t *testing.T) {
	t.Parallel()
	upURL, hl := modernHTTP(t)
	g := startGateway(t, writeConfig(t, map[string]any{"up": map[string]any{"type": "http", "url": upURL}, "other": roleServer(t, "modern")}, nil))
	waitState(t, g, "up", 20*time.Second, StateReady)
	waitState(t, g, "other", 20*time.Second, StateReady)
	gw := serveHTTP(t, g.Handler("full"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "headers-client", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gw.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeSession(t, cs) })

	tools := map[string]*mcp.Tool{}
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		tools[tl.Name] = tl
	}
	schema, _ := json.Marshal(tools["up__regional"].InputSchema)
	if !strings.Contains(string(schema), `"x-mcp-header":"Region"`) {
		t.Errorf("the served schema lost x-mcp-header: %s", schema)
	}
	searching, err := mcp.NewClient(&mcp.Implementation{Name: "search-client", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: serveHTTP(t, g.Handler("search")).URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeSession(t, searching) })
	for _, c := range []struct {
		cs     *mcp.ClientSession
		params *mcp.CallToolParams
	}{
		{cs, &mcp.CallToolParams{Name: "up__regional", Arguments: map[string]any{"region": "eu-west", "id": "7"}}},
		{searching, &mcp.CallToolParams{Name: callToolName, Arguments: map[string]any{"name": "up__regional", "arguments": map[string]any{"region": "ap-south", "id": "8"}}}},
	} {
		res, err := c.cs.CallTool(ctx, c.params)
		if err != nil || res.IsError || !strings.HasPrefix(resultText(res), "record ") {
			t.Fatalf("%s: %v %v", c.params.Name, res, err)
		}
	}
	calls := hl.find("tools/call")
	var regions []string
	for _, h := range calls {
		if h.Get("Mcp-Name") == "regional" {
			regions = append(regions, h.Get("Mcp-Param-Region"))
		}
	}
	if !slices.Equal(regions, []string{"eu-west", "ap-south"}) {
		t.Errorf("the server saw tools/call headers %v; regions %v", calls, regions)
	}
	if lists := hl.find("tools/list"); len(lists) == 0 {
		t.Error("no tools/list with Mcp-Method")
	}
	if reads := hl.find("server/discover"); len(reads) == 0 {
		t.Error("no server/discover with Mcp-Method")
	}

}

// TestAppsPassThrough: the server's extensions capabilities are among the
// gateway's; an MCP Apps tool's _meta, its ui:// resource (URI, MIME type,
// _meta) and the resource's contents pass through unchanged, as
// does a result's _meta (less the server's identity, since to the client
// the gateway is the server); a client's extensions capabilities reach a
// 2026 server with each call, without sampling, which the client did not
// declare.
func TestAppsPassThrough(t *testing.T) {
	t.Parallel()
	g := startGateway(t, writeConfig(t, map[string]any{"m": roleServer(t, "modern")}, nil))
	waitState(t, g, "m", 20*time.Second, StateReady)
	gw := serveHTTP(t, g.Handler("full"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ext := map[string]any{"io.modelcontextprotocol/ui": map[string]any{"mimeTypes": []any{"text/html;profile=mcp-app"}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "apps-client", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Extensions: ext}}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gw.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeSession(t, cs) })
	if e := cs.InitializeResult().Capabilities.Extensions; e == nil || e["io.modelcontextprotocol/ui"] == nil {
		t.Errorf("the gateway's capabilities lack the server's extensions: %v", e)
	}
	tools := map[string]*mcp.Tool{}
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		tools[tl.Name] = tl
	}
	chart := tools["show_chart"]
	if chart == nil {
		t.Fatalf("no show_chart in %v", tools)
	}
	if ui, _ := chart.Meta["ui"].(map[string]any); ui["resourceUri"] != "ui://charts/view.html" {
		t.Errorf("the tool's _meta.ui = %v", chart.Meta)
	}
	var found *mcp.Resource
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if r.URI == "ui://charts/view.html" {
			found = r
		}
	}
	if found == nil || found.MIMEType != "text/html;profile=mcp-app" || found.Meta["ui"] == nil {
		t.Fatalf("the ui:// resource as listed: %+v", found)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: found.URI})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "<html><body>chart</body></html>" || rr.Contents[0].Meta["ui"] == nil {
		t.Errorf("reading %s: %+v %v", found.URI, rr, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "show_chart", Arguments: map[string]any{}})
	if err != nil || res == nil || res.Meta["ui"] == nil {
		t.Fatalf("show_chart result _meta: %v %v", res, err)
	}
	// The identity a 2026 result carries is the gateway's, never the
	// upstream's.
	if si, ok := res.Meta[mcp.MetaKeyServerInfo].(map[string]any); ok && si["name"] != "toolsearch" {
		t.Errorf("show_chart result names server %v", si)
	}

	// The client's extensions reach a 2026 server per call, without
	// sampling, which the client did not declare. (The client speaks
	// 2026-07-28 here, where logging/setLevel is gone; a 2025 client's
	// logging/setLevel is covered in forward_test.go.)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "caps", Arguments: map[string]any{}})
	if err != nil || !strings.Contains(resultText(res), `"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}`) ||
		strings.Contains(resultText(res), "sampling") {
		t.Errorf("caps = %q %v", resultText(res), err)
	}
}

// TestUpstreamHTTPGone: a 2026-07-28 server over HTTP has no event stream
// whose end says it is gone; the gateway notices anyway, when a call fails
// to reach it and, with no call, at its periodic check, and restarts it as
// it restarts any server: ready again once the server is back.
func TestUpstreamHTTPGone(t *testing.T) {
	t.Parallel()
	for _, idle := range []bool{false, true} {
		name := map[bool]string{false: "a call fails", true: "idle"}[idle]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := modernServer()
			h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			srv := &http.Server{Handler: h}
			go func() { _ = srv.Serve(ln) }()
			cfg, err := loadConfigFile(writeConfig(t, map[string]any{"m": map[string]any{"type": "http", "url": "http://" + addr}}, nil))
			if err != nil {
				t.Fatal(err)
			}
			g, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			g.ups()["m"].SetProbeInterval(time.Hour) // only a failed call tells
			if idle {
				g.ups()["m"].SetProbeInterval(200 * time.Millisecond)
			}
			ctx, cancel := context.WithCancel(context.Background())
			g.Start(ctx)
			t.Cleanup(func() { stopGateway(t, g, cancel) })
			if st := waitState(t, g, "m", 10*time.Second, StateReady); st.Protocol != upstream.LatestProtocol {
				t.Fatalf("protocol %s", st.Protocol)
			}
			_ = srv.Close()
			if !idle {
				if res := g.call(context.Background(), nil, "touch", nil); !res.IsError {
					t.Fatalf("a call to a server that is gone: %q", resultText(res))
				}
			}
			st := waitState(t, g, "m", 10*time.Second, StateFailed, StateRestarting)
			if !strings.Contains(st.Error, "unreachable") && !strings.Contains(st.Error, "connection refused") {
				t.Errorf("the error says %q", st.Error)
			}
			ln2, err := net.Listen("tcp", addr)
			if err != nil {
				t.Skipf("the address could not be taken again: %v", err)
			}
			srv2 := &http.Server{Handler: h}
			go func() { _ = srv2.Serve(ln2) }()
			t.Cleanup(func() { _ = srv2.Close() })
			waitState(t, g, "m", 15*time.Second, StateReady)
			if res := g.call(context.Background(), nil, "touch", nil); res.IsError {
				t.Errorf("after the server came back: %q", resultText(res))
			}
		})
	}
}
