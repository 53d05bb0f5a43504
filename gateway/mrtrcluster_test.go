package gateway

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/upstream"
	"github.com/toolsearch/toolsearch/internal/redistest"
)

// withAuth adds an Authorization header to each request: over HTTP, a
// 2026-07-28 client is told from another by it.
type withAuth struct {
	auth string
	next http.RoundTripper
}

func (a withAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", a.auth)
	return a.next.RoundTrip(r)
}

// connectModernVia connects a 2026-07-28 client through rt, as auth.
func connectModernVia(t *testing.T, host string, rt http.RoundTripper, auth string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stateless", Version: "1"}, opts).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: "http://" + host + "/mcp", HTTPClient: &http.Client{Transport: withAuth{auth, rt}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := cs.InitializeResult().ProtocolVersion; v != era2026 {
		t.Fatalf("the client speaks %s, want %s", v, era2026)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// retriesTo routes every retry of a call (a body with a requestState) to
// retry, and everything else to first; it counts the retries.
func retriesTo(first, retry string, n *atomic.Int64) *router {
	rt := &router{}
	rt.route(func(r *http.Request) string {
		if strings.Contains(readBack(r), `"requestState"`) {
			n.Add(1)
			return retry
		}
		return first
	})
	return rt
}

func isRefusedState(err error) bool {
	return err != nil && strings.Contains(err.Error(), "requestState")
}

// TestClusterHeldCallRetryOnAnotherReplica: a 2026-07-28 client calls a
// 2025 server's tool that asks it something; the call is held on replica
// a, and the client's retry reaches replica b, which passes it to a: the
// client gets the server's result. Another client's retry, a wrong kind
// of answer, a replayed retry and a forged state are refused as on one
// gateway.
func TestClusterHeldCallRetryOnAnotherReplica(t *testing.T) {
	t.Parallel()
	f := newShareFixtureWith(t, "held", func(fwd map[string]any) { fwd["protocolVersion"] = upstream.LegacyProtocol })
	var retries atomic.Int64
	rt := retriesTo(f.hostA, f.hostB, &retries)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	call := func(state string, answer mcp.InputResponseMap) *mcp.CallToolParams {
		return &mcp.CallToolParams{Name: callToolName, Arguments: map[string]any{"name": "fwd__ask_elicit", "arguments": map[string]any{}},
			RequestState: state, InputResponses: answer}
	}

	// A client whose SDK answers by itself sees only the result.
	auto := connectModernVia(t, f.hostA, rt, "Bearer alice", answering(true))
	if res, err := auto.CallTool(ctx, call("", nil)); err != nil || resultText(res) != "accept Ada" {
		t.Fatalf("through two replicas: %v %v", resultText(res), err)
	}
	if retries.Load() != 1 {
		t.Fatalf("%d retries reached b, want 1", retries.Load())
	}

	manual := connectModernVia(t, f.hostA, rt, "Bearer alice", answering(false))
	mallory := connectModernVia(t, f.hostA, rt, "Bearer mallory", answering(false))
	res, err := manual.CallTool(ctx, call("", nil))
	if err != nil || !res.NeedsInput() || !strings.HasPrefix(res.RequestState, heldStatePrefix) {
		t.Fatalf("want input_required with a held state, got %v %v", res, err)
	}
	var key string
	for k := range res.InputRequests {
		key = k
	}
	state := res.RequestState
	good := mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Grace"}}}
	if res, err := mallory.CallTool(ctx, call(state, good)); !isRefusedState(err) {
		t.Errorf("another client's retry on b = %v, %v; want refused", res, err)
	}
	//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
	wrong := mcp.InputResponseMap{key: &mcp.ListRootsResult{Roots: []*mcp.Root{}}}
	if res, err := manual.CallTool(ctx, call(state, wrong)); err != nil || !res.IsError || !strings.Contains(resultText(res), "cannot be answered") {
		t.Errorf("a roots answer to an elicitation, on b = %q, %v", resultText(res), err)
	}
	if res, err := manual.CallTool(ctx, call(state, good)); err != nil || resultText(res) != "accept Grace" {
		t.Errorf("the retry on b = %q, %v", resultText(res), err)
	}
	if res, err := manual.CallTool(ctx, call(state, good)); !isRefusedState(err) {
		t.Errorf("the same retry again = %v, %v; want refused", res, err)
	}
	if res, err := manual.CallTool(ctx, call(heldStatePrefix+strings.Repeat("0", 32), good)); !isRefusedState(err) {
		t.Errorf("a forged held state = %v, %v; want refused", res, err)
	}
	if n := len(f.a.g.fwd.mrtr.held); n != 0 {
		t.Errorf("a still holds %d calls", n)
	}
}

// retryPair is two replicas sharing Redis in front of one 2026-07-28
// server, with two 2026-07-28 clients (alice and mallory) whose first
// requests go to replica a and every retry (a body with a requestState)
// to replica b, counted in retries.
type retryPair struct {
	ctx            context.Context
	hostA          string
	alice, mallory *mcp.ClientSession
	answer         mcp.InputResponseMap // the server's question answered
	retries        atomic.Int64
}

func newRetryPair(t *testing.T, prefix string) *retryPair {
	t.Helper()
	srv := redistest.Start(t)
	path := clusterConfig(t, map[string]any{"m": roleServer(t, "modern")}, srv.URL(0), prefix, map[string]any{"exposure": "full"})
	p := &retryPair{answer: mcp.InputResponseMap{"name": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Grace"}}}}
	var hostB string
	p.hostA, hostB = twoServing(t, path, "m")
	rt := retriesTo(p.hostA, hostB, &p.retries)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	p.ctx = ctx
	p.alice = connectModernVia(t, p.hostA, rt, "Bearer alice", answering(false))
	p.mallory = connectModernVia(t, p.hostA, rt, "Bearer mallory", answering(false))
	return p
}

// TestClusterServerStateRetryOnAnotherReplica: a 2026-07-28 server's
// input_required reaches the client through replica a; the client's retry
// reaches replica b, which knows from the cluster that a handed that
// state to this client for this tool, and calls its own copy of the
// server with it. Another client, another tool, and a replay (on either
// replica) are refused.
func TestClusterServerStateRetryOnAnotherReplica(t *testing.T) {
	t.Parallel()
	p := newRetryPair(t, "bind")
	ctx, alice, mallory, answer, hostA := p.ctx, p.alice, p.mallory, p.answer, p.hostA
	retries := &p.retries

	res, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{}})
	if err != nil || !res.NeedsInput() {
		t.Fatalf("first call: %v %v", res, err)
	}
	state := res.RequestState
	retry := func(cs *mcp.ClientSession, tool string) (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}, InputResponses: answer, RequestState: state})
	}
	if res, err := retry(mallory, "ask"); !isRefusedState(err) {
		t.Errorf("another client's retry on b = %v, %v", res, err)
	}
	if res, err := retry(alice, "ask_sample"); !isRefusedState(err) {
		t.Errorf("a retry against another tool on b = %v, %v", res, err)
	}
	if res, err := retry(alice, "ask"); err != nil || resultText(res) != "accept Grace state="+state {
		t.Fatalf("the retry on b = %q, %v", resultText(res), err)
	}
	if res, err := retry(alice, "ask"); !isRefusedState(err) {
		t.Errorf("a replay on b = %v, %v", res, err)
	}
	// a handed the state out and still has its binding: the cluster says
	// it was used.
	direct := &router{}
	direct.route(func(*http.Request) string { return hostA })
	again := connectModernVia(t, hostA, direct, "Bearer alice", answering(false))
	if res, err := again.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{}, InputResponses: answer, RequestState: state}); !isRefusedState(err) {
		t.Errorf("a replay on a = %v, %v", res, err)
	}
	if retries.Load() < 4 {
		t.Errorf("%d retries reached b", retries.Load())
	}
}

// TestClusterPromptAndResourceStateOnAnotherReplica: a 2026-07-28
// server's input_required for prompts/get and resources/read reaches the
// client through replica a; the client's retry reaches replica b, which
// accepts the state a handed out to this client for that prompt or
// resource, as it does a tool call's. Another client, another prompt and
// a replay are refused.
func TestClusterPromptAndResourceStateOnAnotherReplica(t *testing.T) {
	t.Parallel()
	p := newRetryPair(t, "rounds")
	ctx, alice, mallory, answer := p.ctx, p.alice, p.mallory, p.answer
	retries := &p.retries

	res, err := alice.GetPrompt(ctx, &mcp.GetPromptParams{Name: "ask_prompt"})
	if err != nil || !res.NeedsInput() {
		t.Fatalf("first prompts/get: %+v %v", res, err)
	}
	state := res.RequestState
	retry := func(cs *mcp.ClientSession, name string) (*mcp.GetPromptResult, error) {
		return cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, InputResponses: answer, RequestState: state})
	}
	if res, err := retry(mallory, "ask_prompt"); !isRefusedState(err) {
		t.Errorf("another client's retry on b = %+v, %v", res, err)
	}
	if res, err := retry(alice, "ask_prompt_too"); !isRefusedState(err) {
		t.Errorf("a retry against another prompt on b = %+v, %v", res, err)
	}
	res, err = retry(alice, "ask_prompt")
	if err != nil || res.NeedsInput() || len(res.Messages) != 1 || res.Messages[0].Content.(*mcp.TextContent).Text != "hello Grace state="+state {
		t.Fatalf("the retry on b = %+v, %v", res, err)
	}
	if res, err := retry(alice, "ask_prompt"); !isRefusedState(err) {
		t.Errorf("a replay on b = %+v, %v", res, err)
	}

	rr, err := alice.ReadResource(ctx, &mcp.ReadResourceParams{URI: "ask://secret"})
	if err != nil || !rr.NeedsInput() {
		t.Fatalf("first resources/read: %+v %v", rr, err)
	}
	rr2, err := alice.ReadResource(ctx, &mcp.ReadResourceParams{URI: "ask://secret", InputResponses: answer, RequestState: rr.RequestState})
	if err != nil || rr2.NeedsInput() || len(rr2.Contents) != 1 || rr2.Contents[0].Text != "for Grace state="+rr.RequestState {
		t.Errorf("the read's retry on b = %+v, %v", rr2, err)
	}
	if n := retries.Load(); n < 5 {
		t.Errorf("%d retries reached b, want 5", n)
	}
}
