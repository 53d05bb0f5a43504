package gateway

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// faultCall is one call of the faulty server's tools through the gateway
// and what it must give: an error that names the server and says what
// happened, or a result, within a bound.
type faultCall struct {
	tool    string         // tool of the faulty server
	args    map[string]any // its arguments
	wantErr bool
	want    []string      // substrings of the text (any one of each "|"-separated set)
	within  time.Duration // the bound on the call
}

// faultRow is one row of the fault matrix.
type faultRow struct {
	name string
	// server returns the faulty server's config entry; heal, when not nil,
	// fixes the fault (the next start of the server works).
	server func(t *testing.T) (entry map[string]any, heal func())
	// ready: the server comes up before the fault (a fault in a session);
	// otherwise the fault is at start and the server is failed first.
	ready bool
	// before runs once the gateway is up, before the calls (turns a fault
	// on, sets the client's log level...).
	before func(t *testing.T, fx *faultFixture)
	calls  []faultCall
	// recovery: "restart" (the gateway restarts the server by itself),
	// "heal" (it comes back once the fault is fixed), "stays" (the server
	// stays up and keeps answering: no restart needed).
	recovery string
	// limits override faultLimits for the row.
	limits map[string]any
	// after runs last (checks particular to the row).
	after func(t *testing.T, fx *faultFixture)
	// http: the faulty server is an in-process streamable HTTP upstream
	// (faultyHTTP), failing from the start (httpFailing) or not, with
	// httpStatus when it fails.
	http        bool
	httpStatus  int
	httpFailing bool
}

// faultFixture is one row's gateway, its client, and the fault's switches.
type faultFixture struct {
	g    *Gateway
	c    *client
	url  string
	http *faultyHTTP // the HTTP upstream, for the HTTP rows
}

// faultLimits are tight limits, so that every bound of the matrix is a few
// seconds: 2s to start, 3s a call, one restart before giving up, then a
// cool-down of a second (doubling).
var faultLimits = map[string]any{"startTimeout": "2s", "callTimeout": "3s", "maxRestarts": 1, "restartCooldown": "1s"}

// faultRows is the fault matrix. Every row runs against its own gateway,
// with the faulty server as "faulty" next to a healthy Go SDK echo server
// ("healthy", a real subprocess), and is checked for:
//
//  1. the gateway stays up: its client session keeps answering, a search
//     works, /healthz answers and shows the faulty server's state;
//  2. each call of the faulty server ends within its bound, failing with a
//     message that names the server and says what happened (or, for the
//     faults a server survives, succeeding);
//  3. the healthy server is unaffected: calls to it, made all through the
//     fault, succeed and stay fast;
//  4. the faulty server recovers when it can.
//
// TestFaults (gateway_test.go) checks how several of these faults are
// reported at start; this matrix puts every fault in one table and checks
// all four points on each.
func faultRows() []faultRow {
	role := func(name string) func(t *testing.T) (map[string]any, func()) {
		return func(t *testing.T) (map[string]any, func()) { return roleServer(t, name), nil }
	}
	fault := func(name string) func(t *testing.T) (map[string]any, func()) {
		return func(t *testing.T) (map[string]any, func()) { return faultServer(t, name) }
	}
	httpRow := func(name string, startFailing bool, status int, calls []faultCall, before func(*testing.T, *faultFixture)) faultRow {
		return faultRow{name: name, ready: !startFailing, recovery: "heal", calls: calls, before: before}.withHTTP(startFailing, status)
	}
	return []faultRow{
		{
			name: "crash mid-call", server: role("echo"), ready: true, recovery: "restart",
			calls: []faultCall{{tool: "crash", wantErr: true, within: 10 * time.Second,
				want: []string{"stopped while the call", "dying mid-call", "being restarted"}}},
		},
		{
			name: "crash during initialize", server: fault("crash-init"), recovery: "heal",
			calls: []faultCall{{tool: "echo", wantErr: true, within: 10 * time.Second,
				want: []string{"exited during initialize", "dying during initialize"}}},
		},
		{
			name: "never answers initialize", server: fault("hang-init"), recovery: "heal",
			calls: []faultCall{{tool: "echo", wantErr: true, within: 10 * time.Second,
				want: []string{"did not answer initialize within 2s"}}},
		},
		{
			name: "never answers a call", server: fault("stall"), ready: true, recovery: "stays",
			calls: []faultCall{
				{tool: "stall", wantErr: true, within: 10 * time.Second, want: []string{"timed out after 3s"}},
				{tool: "echo", args: map[string]any{"text": "still here"}, within: 5 * time.Second, want: []string{"still here"}},
			},
		},
		{
			name: "answers slowly", server: role("echo"), ready: true, recovery: "stays",
			calls: []faultCall{
				{tool: "slow", args: map[string]any{"millis": 1200}, within: 8 * time.Second, want: []string{"done"}},
				{tool: "slow", args: map[string]any{"millis": 60000}, wantErr: true, within: 10 * time.Second, want: []string{"timed out after 3s"}},
				{tool: "echo", args: map[string]any{"text": "after the timeout"}, within: 5 * time.Second, want: []string{"after the timeout"}},
			},
		},
		{
			name: "garbage on stdout", server: fault("garbage-init"), recovery: "heal",
			calls: []faultCall{{tool: "echo", wantErr: true, within: 10 * time.Second,
				want: []string{"not JSON-RPC", "initialize"}}},
		},
		{
			name: "partial JSON line", server: fault("partial"), ready: true, recovery: "restart",
			calls: []faultCall{{tool: "truncated", wantErr: true, within: 10 * time.Second,
				want: []string{"stopped while the call|failed"}}},
		},
		{
			name: "half a line, no line end", server: fault("partial"), ready: true, recovery: "restart",
			calls: []faultCall{{tool: "unterminated", wantErr: true, within: 10 * time.Second,
				want: []string{"timed out after 3s"}}},
		},
		{
			// Its exit, not the start timeout, must end the start: on a
			// busy machine the process can take over 2s to start and exit.
			name: "exits at once", server: fault("exit-init"), recovery: "heal",
			limits: map[string]any{"startTimeout": "15s"},
			calls: []faultCall{{tool: "echo", wantErr: true, within: 10 * time.Second,
				want: []string{"API_TOKEN is not set", "exit"}}},
		},
		{
			// The calls answer through the flood in well under a second
			// (a few seconds under the race detector, which slows the
			// SDK's decoding tenfold): the call timeout is raised so that
			// the bound on the call is what is checked.
			name: "floods notifications", server: fault("flood"), ready: true, recovery: "stays",
			limits: map[string]any{"callTimeout": "30s"},
			before: func(t *testing.T, fx *faultFixture) {
				// The client asks for every log message: the flood of
				// log messages goes all the way through to it.
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				//lint:ignore SA1019 log messages are forwarded for 2025-11-25 clients and servers, which still send them
				if err := fx.c.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
					t.Fatal(err)
				}
				waitFor(t, "the flood to start", 10*time.Second, func() bool {
					return strings.Contains(fx.g.ups()["faulty"].Stderr().String(), "flood: sent")
				})
			},
			calls: func() []faultCall {
				var calls []faultCall
				for i := range 6 {
					text := fmt.Sprintf("through the flood %d", i)
					calls = append(calls, faultCall{tool: "echo", args: map[string]any{"text": text}, within: 5 * time.Second, want: []string{text}})
				}
				return calls
			}(),
			after: func(t *testing.T, fx *faultFixture) {
				tail := fx.g.ups()["faulty"].Stderr().String()
				lines := strings.Split(tail, "\n")
				t.Logf("flood: %s", lines[len(lines)-1])
				fx.c.mu.Lock()
				n := len(fx.c.logs)
				fx.c.mu.Unlock()
				if n == 0 {
					t.Error("the client received none of the flood's log messages")
				}
				t.Logf("flood: the client received %d log messages", n)
			},
		},
		httpRow("HTTP upstream answers 500 from the start", true, http.StatusInternalServerError,
			[]faultCall{{tool: "echo", wantErr: true, within: 10 * time.Second, want: []string{"Internal Server Error"}}}, nil),
		httpRow("HTTP upstream starts answering 500", false, http.StatusInternalServerError,
			[]faultCall{{tool: "echo", args: map[string]any{"text": "x"}, wantErr: true, within: 10 * time.Second, want: []string{"Internal Server Error"}}},
			func(t *testing.T, fx *faultFixture) { fx.http.failing.Store(true) }),
		httpRow("HTTP upstream starts answering 503", false, http.StatusServiceUnavailable,
			[]faultCall{{tool: "echo", args: map[string]any{"text": "x"}, wantErr: true, within: 10 * time.Second, want: []string{"Service Unavailable"}}},
			func(t *testing.T, fx *faultFixture) { fx.http.failing.Store(true) }),
		faultRow{
			name: "HTTP upstream drops the connection mid-stream", ready: true, recovery: "restart",
			calls: []faultCall{
				{tool: "drop", wantErr: true, within: 10 * time.Second, want: []string{"terminated|stopped|failed"}},
			},
		}.withHTTP(false, 0),
		faultRow{
			name: "HTTP upstream drops the connection after an event", ready: true, recovery: "restart",
			before: func(t *testing.T, fx *faultFixture) { fx.http.dropMode.Store(1) },
			calls: []faultCall{
				{tool: "drop", wantErr: true, within: 10 * time.Second, want: []string{"terminated|stopped|failed"}},
			},
		}.withHTTP(false, 0),
	}
}

// withHTTP makes the row's faulty server an in-process streamable HTTP
// upstream (set up by runFaultRow), failing from the start or not, with
// the given status when it fails.
func (r faultRow) withHTTP(startFailing bool, status int) faultRow {
	r.server = nil
	r.http, r.httpStatus, r.httpFailing = true, status, startFailing
	return r
}

func TestFaultMatrix(t *testing.T) {
	t.Parallel()
	for _, row := range faultRows() {
		t.Run(strings.ReplaceAll(row.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			runFaultRow(t, row)
		})
	}
}

func runFaultRow(t *testing.T, row faultRow) {
	fx := &faultFixture{}
	var entry map[string]any
	var heal func()
	if !row.http {
		entry, heal = row.server(t)
	} else {
		fx.http = newFaultyHTTP()
		if row.httpStatus != 0 {
			fx.http.status.Store(int32(row.httpStatus))
		}
		fx.http.failing.Store(row.httpFailing)
		up := serveHTTP(t, fx.http)
		entry = map[string]any{"type": "http", "url": up.URL}
		heal = func() { fx.http.failing.Store(false) }
	}
	limits := map[string]any{}
	for k, v := range faultLimits {
		limits[k] = v
	}
	for k, v := range row.limits {
		limits[k] = v
	}
	// The tight start timeout is for the faults of a start: a server
	// whose fault comes once it is up, and the healthy one, start within
	// the default, however busy the machine (a start timed out would count
	// as a restart).
	if row.ready {
		entry["startTimeout"] = "30s"
	}
	healthy := roleServer(t, "echo")
	healthy["startTimeout"] = "30s"
	fx.g = startGateway(t, writeConfig(t, map[string]any{"faulty": entry, "healthy": healthy},
		map[string]any{"limits": limits}))
	waitState(t, fx.g, "healthy", 30*time.Second, StateReady)
	if row.ready {
		waitState(t, fx.g, "faulty", 30*time.Second, StateReady)
	} else {
		st := waitState(t, fx.g, "faulty", 30*time.Second, StateFailed)
		t.Logf("at start: %s: %s", st.State, st.Error)
	}
	srv := serveHTTP(t, fx.g.Handler("search"))
	fx.url = srv.URL
	fx.c = connectHTTP(t, srv.URL+"/mcp", nil)
	healthyCall(t, fx.c, "before the fault", 10*time.Second)
	if row.before != nil {
		row.before(t, fx)
	}

	// The healthy server is called all through the fault, from a second
	// client, so that a fault that blocks the gateway shows.
	other := connectHTTP(t, srv.URL+"/mcp", nil)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var healthMu sync.Mutex
	var healthCalls, healthFails int
	var slowest time.Duration
	var firstFail string
	wg.Go(func() {
		for i := 0; ; i++ {
			if i > 0 {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
			want := fmt.Sprintf("healthy %d", i)
			start := time.Now()
			text, isErr := callTool(other, "healthy__echo", map[string]any{"text": want}, 15*time.Second)
			d := time.Since(start)
			healthMu.Lock()
			healthCalls++
			slowest = max(slowest, d)
			if isErr || text != want {
				healthFails++
				if firstFail == "" {
					firstFail = text
				}
			}
			healthMu.Unlock()
		}
	})

	for i, fc := range row.calls {
		start := time.Now()
		text, isErr := callTool(fx.c, "faulty__"+fc.tool, fc.args, fc.within+10*time.Second)
		took := time.Since(start)
		if raceEnabled {
			// The race detector slows everything; the bounds stay a few
			// seconds all the same.
			fc.within *= 3
		}
		t.Logf("call %d faulty__%s after %v: error %v: %s", i, fc.tool, took.Round(time.Millisecond), isErr, text)
		if took > fc.within {
			t.Errorf("call %d of faulty__%s took %v, want at most %v", i, fc.tool, took, fc.within)
		}
		if isErr != fc.wantErr {
			t.Errorf("call %d of faulty__%s: error %v, want %v: %s", i, fc.tool, isErr, fc.wantErr, text)
		}
		if fc.wantErr && !strings.Contains(text, `"faulty"`) && !strings.Contains(text, "faulty__") {
			t.Errorf("call %d of faulty__%s: the error does not name the server: %s", i, fc.tool, text)
		}
		for _, w := range fc.want {
			if !containsAny(text, strings.Split(w, "|")) {
				t.Errorf("call %d of faulty__%s: %q lacks %q", i, fc.tool, text, w)
			}
		}
	}

	waitFor(t, "a call of the healthy server during the fault", 20*time.Second, func() bool {
		healthMu.Lock()
		defer healthMu.Unlock()
		return healthCalls > 0
	})
	close(stop)
	wg.Wait()
	healthMu.Lock()
	t.Logf("healthy server during the fault: %d calls, %d failed, slowest %v", healthCalls, healthFails, slowest.Round(time.Millisecond))
	if healthFails > 0 {
		t.Errorf("the healthy server failed %d of %d calls during the fault; first: %s", healthFails, healthCalls, firstFail)
	}
	if slowest > 5*time.Second && !raceEnabled || slowest > 15*time.Second {
		t.Errorf("a call to the healthy server took %v during the fault", slowest)
	}
	healthMu.Unlock()

	// The gateway stays up.
	healthyCall(t, fx.c, "after the fault", 10*time.Second)
	if hits := fx.c.search(t, "echo the text back"); !containsAny(strings.Join(hits, " "), []string{"healthy__echo"}) {
		t.Errorf("search after the fault found %v", hits)
	}
	resp, err := httpGet(t, srv.URL+"/healthz")
	if err != nil {
		t.Fatalf("/healthz after the fault: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"name": "faulty"`) {
		t.Errorf("/healthz after the fault: %d %s", resp.StatusCode, body)
	}

	// Recovery.
	switch row.recovery {
	case "heal":
		heal()
		fallthrough
	case "restart":
		waitState(t, fx.g, "faulty", 30*time.Second, StateReady)
		waitFor(t, "a working call of the recovered server", 30*time.Second, func() bool {
			text, isErr := callTool(fx.c, "faulty__echo", map[string]any{"text": "recovered"}, 10*time.Second)
			return !isErr && text == "recovered"
		})
		st := waitState(t, fx.g, "faulty", time.Second, StateReady)
		t.Logf("recovered after %d restarts", st.Restarts)
	case "stays":
		st := waitState(t, fx.g, "faulty", time.Second, StateReady)
		if st.Restarts != 0 {
			t.Errorf("the server was restarted %d times; it should have stayed up", st.Restarts)
		}
		if text, isErr := callTool(fx.c, "faulty__echo", map[string]any{"text": "still up"}, 10*time.Second); isErr || text != "still up" {
			t.Errorf("after the fault: faulty__echo = %q, %v", text, isErr)
		}
	default:
		t.Fatalf("unknown recovery %q", row.recovery)
	}
	if row.after != nil {
		row.after(t, fx)
	}
}

// callTool calls a tool through call_tool, within d.
func callTool(c *client, name string, args map[string]any, d time.Duration) (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	p := map[string]any{"name": name}
	if args != nil {
		p["arguments"] = args
	}
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: callToolName, Arguments: p})
	if err != nil {
		return "protocol error: " + err.Error(), true
	}
	var b strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

func healthyCall(t *testing.T, c *client, when string, d time.Duration) {
	t.Helper()
	start := time.Now()
	text, isErr := callTool(c, "healthy__echo", map[string]any{"text": "hello"}, d)
	if isErr || text != "hello" {
		t.Fatalf("%s: healthy__echo = %q, %v", when, text, isErr)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("%s: healthy__echo took %v", when, took)
	}
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
