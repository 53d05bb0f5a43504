package dashboard

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/gateway"
)

func TestRing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		size   int
		push   int
		dropLT int // drop the values below
		want   []int
	}{
		{"empty", 3, 0, 0, []int{}},
		{"under", 3, 2, 0, []int{1, 2}},
		{"full", 3, 3, 0, []int{1, 2, 3}},
		{"wraps", 3, 7, 0, []int{5, 6, 7}},
		{"drops the oldest", 4, 6, 5, []int{5, 6}},
		{"drops all", 2, 5, 100, []int{}},
		{"size one", 1, 4, 0, []int{4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRing[int](tc.size)
			for i := 1; i <= tc.push; i++ {
				r.push(i)
			}
			r.dropWhile(func(v int) bool { return v < tc.dropLT })
			if got := r.all(); !slices.Equal(got, tc.want) || r.len() != len(tc.want) {
				t.Errorf("ring holds %v (len %d), want %v", got, r.len(), tc.want)
			}
			r.push(99) // still usable after wrapping and dropping
			if got := r.all(); got[len(got)-1] != 99 || len(got) > tc.size {
				t.Errorf("after one more push the ring holds %v", got)
			}
		})
	}
}

// clock is a settable time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newClocked(keep int, retention time.Duration) (*Dashboard, *clock) {
	c := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	return New(Options{Keep: keep, Retention: retention, Now: c.now}), c
}

func open(d *Dashboard, c *clock, id string) {
	d.SessionChanged(gateway.SessionEvent{Time: c.now(), Session: id, Client: "client " + id, Exposure: "search", Why: "set",
		FullTokens: 1000, SentTokens: 100})
}

func TestKeepAndRetention(t *testing.T) {
	t.Parallel()
	d, c := newClocked(3, time.Hour)
	open(d, c, "1")
	for i := 1; i <= 5; i++ {
		c.add(time.Second)
		d.Searched(gateway.SearchEvent{Time: c.now(), Session: "1", Query: fmt.Sprint("q", i), Form: "keyword"})
	}
	st := d.State()
	var got []string
	for _, s := range st.Searches {
		got = append(got, s.Query)
	}
	if want := []string{"q5", "q4", "q3"}; !slices.Equal(got, want) {
		t.Errorf("with keep 3 the searches are %v, want %v", got, want)
	}
	if st.Sessions[0].Searches != 5 {
		t.Errorf("the session counts %d searches, want 5 (the count outlives the ring)", st.Sessions[0].Searches)
	}
	c.add(time.Hour + time.Second)
	if st := d.State(); len(st.Searches) != 0 || len(st.Misses) != 0 {
		t.Errorf("past the retention the state still lists %d searches and %d misses", len(st.Searches), len(st.Misses))
	}
	// Closed sessions past the retention are forgotten; open ones stay.
	d.SessionChanged(gateway.SessionEvent{Time: c.now(), Session: "1", Closed: true})
	open(d, c, "2")
	c.add(2 * time.Hour)
	open(d, c, "3")
	var ids []string
	for _, s := range d.State().Sessions {
		ids = append(ids, s.ID)
	}
	slices.Sort(ids)
	if want := []string{"2", "3"}; !slices.Equal(ids, want) {
		t.Errorf("sessions %v, want %v (the closed one forgotten)", ids, want)
	}
}

func TestClosedSessionsBounded(t *testing.T) {
	t.Parallel()
	d, c := newClocked(4, time.Hour)
	for i := range 20 {
		id := fmt.Sprint(i)
		open(d, c, id)
		c.add(time.Second)
		d.SessionChanged(gateway.SessionEvent{Time: c.now(), Session: id, Closed: true})
	}
	if n := len(d.State().Sessions); n > 4 {
		t.Errorf("%d closed sessions kept with keep 4", n)
	}
}

// TestFollow checks what each search led to, from scripted events.
func TestFollow(t *testing.T) {
	t.Parallel()
	type step struct {
		after time.Duration
		ev    any
	}
	search := func(sess, q string, results ...string) gateway.SearchEvent {
		return gateway.SearchEvent{Session: sess, Query: q, Form: "keyword", Results: results, Total: len(results)}
	}
	callOf := func(sess, tool string) gateway.CallEvent {
		return gateway.CallEvent{Session: sess, Tool: tool, Outcome: "ok", Duration: 3 * time.Millisecond}
	}
	tests := []struct {
		name       string
		steps      []step
		outcomes   []string // newest first
		misses     []string
		uncalled   []string // calls with no search
		lastCalled []string // tools the newest search led to
	}{
		{"a search then its call", []step{{0, search("1", "send mail", "mail__send")}, {time.Second, callOf("1", "mail__send")}},
			[]string{OutcomeCalled}, nil, nil, []string{"mail__send"}},
		{"a search with nothing after is waiting", []step{{0, search("1", "send mail", "mail__send")}},
			[]string{OutcomeWaiting}, nil, nil, nil},
		{"a search left alone for long is a miss", []step{{0, search("1", "send mail", "mail__send")}, {3 * time.Minute, nil}},
			[]string{OutcomeNoCall}, []string{"send mail"}, nil, nil},
		{"a search followed by another is a miss", []step{{0, search("1", "fax it")}, {time.Second, search("1", "send mail", "mail__send")}},
			[]string{OutcomeWaiting, OutcomeNoCall}, []string{"fax it"}, nil, nil},
		{"a call of a tool found earlier goes to that search", []step{
			{0, search("1", "send mail", "mail__send")}, {time.Second, search("1", "read files", "fs__read")},
			{time.Second, callOf("1", "mail__send")}},
			[]string{OutcomeNoCall, OutcomeCalled}, []string{"read files"}, nil, nil},
		{"another session's search does not count", []step{{0, search("1", "send mail", "mail__send")}, {time.Second, callOf("2", "mail__send")}},
			[]string{OutcomeWaiting}, nil, []string{"mail__send"}, nil},
		{"a refused search is a miss with its error", []step{
			{0, gateway.SearchEvent{Session: "1", Query: "re:(", Error: "bad regex"}}, {time.Second, search("1", "x", "a__b")}},
			[]string{OutcomeWaiting, OutcomeRefused}, []string{"re:("}, nil, nil},
		{"the same miss twice is counted twice", []step{
			{0, search("1", "Fax  it")}, {time.Second, search("1", "fax it")}, {time.Second, search("1", "mail", "m__s")},
			{time.Second, callOf("1", "m__s")}},
			[]string{OutcomeCalled, OutcomeNoCall, OutcomeNoCall}, []string{"fax it"}, nil, []string{"m__s"}},
		{"a closed session's last search is a miss", []step{
			{0, search("1", "send mail", "mail__send")}, {time.Second, gateway.SessionEvent{Session: "1", Closed: true}}},
			[]string{OutcomeNoCall}, []string{"send mail"}, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, c := newClocked(100, time.Hour)
			open(d, c, "1")
			open(d, c, "2")
			for _, s := range tc.steps {
				c.add(s.after)
				switch ev := s.ev.(type) {
				case gateway.SearchEvent:
					ev.Time = c.now()
					d.Searched(ev)
				case gateway.CallEvent:
					ev.Time = c.now()
					d.Called(ev)
				case gateway.SessionEvent:
					ev.Time = c.now()
					d.SessionChanged(ev)
				}
			}
			st := d.State()
			var outcomes, misses, uncalled, lastCalled []string
			for _, s := range st.Searches {
				outcomes = append(outcomes, s.Outcome)
			}
			for _, m := range st.Misses {
				misses = append(misses, strings.ToLower(strings.Join(strings.Fields(m.Query), " ")))
			}
			for _, c := range st.Calls {
				uncalled = append(uncalled, c.Tool)
			}
			if len(st.Searches) > 0 {
				for _, c := range st.Searches[0].Called {
					lastCalled = append(lastCalled, c.Tool)
				}
			}
			if !slices.Equal(outcomes, tc.outcomes) {
				t.Errorf("outcomes %q, want %q", outcomes, tc.outcomes)
			}
			if !slices.Equal(misses, tc.misses) {
				t.Errorf("misses %q, want %q", misses, tc.misses)
			}
			if !slices.Equal(uncalled, tc.uncalled) {
				t.Errorf("calls without a search %q, want %q", uncalled, tc.uncalled)
			}
			if !slices.Equal(lastCalled, tc.lastCalled) {
				t.Errorf("the newest search led to %q, want %q", lastCalled, tc.lastCalled)
			}
			if tc.name == "the same miss twice is counted twice" && st.Misses[0].Count != 2 {
				t.Errorf("the repeated miss counts %d, want 2", st.Misses[0].Count)
			}
		})
	}
}

func TestSessionChanges(t *testing.T) {
	t.Parallel()
	d, c := newClocked(100, time.Hour)
	d.SessionChanged(gateway.SessionEvent{Time: c.now(), Session: "9", Closed: true})
	if n := len(d.State().Sessions); n != 0 {
		t.Fatalf("a session never seen open shows after closing: %d", n)
	}
	open(d, c, "1")
	seq := d.State().Seq
	c.add(time.Second)
	open(d, c, "1") // the same state again
	if d.State().Seq != seq {
		t.Error("telling the same session state again counts as a change")
	}
	c.add(time.Second)
	d.SessionChanged(gateway.SessionEvent{Time: c.now(), Session: "1", Client: "client 1", Exposure: "dynamic", Why: "switched",
		FullTokens: 5000, SentTokens: 300})
	open(d, c, "2")
	c.add(time.Second)
	d.SessionChanged(gateway.SessionEvent{Time: c.now(), Session: "1", Closed: true})
	c.add(time.Second)
	open(d, c, "1") // a late sync of a closed session
	st := d.State()
	byID := map[string]Session{}
	for _, s := range st.Sessions {
		byID[s.ID] = s
	}
	if s := byID["1"]; s.Open || s.Exposure != "dynamic" || s.Closed == nil {
		t.Errorf("session 1 %+v: want closed, last seen dynamic", s)
	}
	var points [][2]int
	for _, p := range st.Economy.Points {
		points = append(points, [2]int{p.Full, p.Sent})
	}
	want := [][2]int{{1000, 100}, {5000, 300}, {6000, 400}, {1000, 100}}
	if !slices.Equal(points, want) {
		t.Errorf("economy points %v, want %v", points, want)
	}
}

func TestHTTP(t *testing.T) {
	t.Parallel()
	d, _ := newClocked(10, time.Hour)
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	tests := []struct {
		method, path string
		want         int
		ctype        string
		body         string
	}{
		{"GET", "/ui", http.StatusFound, "", ""},
		{"GET", "/ui/", http.StatusFound, "", ""},
		{"GET", "/ui/servers", http.StatusOK, "text/html", `<script src="/ui/app.js" defer>`},
		{"GET", "/ui/clients", http.StatusOK, "text/html", "<nav>"},
		{"GET", "/ui/searches", http.StatusOK, "text/html", "<nav>"},
		{"GET", "/ui/economy", http.StatusOK, "text/html", "<nav>"},
		{"HEAD", "/ui/economy", http.StatusOK, "text/html", ""},
		{"GET", "/ui/app.js", http.StatusOK, "text/javascript", "createTextNode"},
		{"GET", "/ui/style.css", http.StatusOK, "text/css", "--accent"},
		{"GET", "/ui/api/state", http.StatusOK, "application/json", `"servers":[]`},
		{"GET", "/ui/<script>", http.StatusNotFound, "text/plain", "the pages are /ui/servers"},
		{"GET", "/ui/servers/x", http.StatusNotFound, "text/plain", ""},
		{"POST", "/ui/api/state", http.StatusMethodNotAllowed, "text/plain", "GET and HEAD only"},
		{"DELETE", "/ui/servers", http.StatusMethodNotAllowed, "text/plain", ""},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := noRedirect.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, b, tc.want)
			}
			if !strings.HasPrefix(resp.Header.Get("Content-Type"), tc.ctype) {
				t.Errorf("Content-Type %q, want %q", resp.Header.Get("Content-Type"), tc.ctype)
			}
			if !strings.Contains(string(b), tc.body) {
				t.Errorf("body %q lacks %q", b, tc.body)
			}
			if strings.Contains(string(b), "<script>") && resp.StatusCode != http.StatusOK {
				t.Errorf("an error echoes markup: %q", b)
			}
			csp := resp.Header.Get("Content-Security-Policy")
			if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") ||
				resp.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("headers CSP %q, nosniff %q", csp, resp.Header.Get("X-Content-Type-Options"))
			}
		})
	}
}

// readEvent reads one server-sent event's data line.
func readEvent(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("the event stream ended: %v", err)
		}
		if data, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "data: "); ok {
			return data
		}
	}
}

func TestEventStream(t *testing.T) {
	t.Parallel()
	d, c := newClocked(10, time.Hour)
	srv := httptest.NewServer(d)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/ui/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	r := bufio.NewReader(resp.Body)
	first := readEvent(t, r)
	open(d, c, "1")
	second := readEvent(t, r)
	if first == second || !strings.HasPrefix(second, `{"seq":`) {
		t.Errorf("events %q then %q: want the sequence to move", first, second)
	}
	if want := fmt.Sprintf(`{"seq":%d}`, d.State().Seq); second != want {
		t.Errorf("event %q, want %q", second, want)
	}
	// Closing the dashboard ends the stream.
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, r)
		done <- err
	}()
	d.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the event stream outlived Close")
	}
}

func TestEventStreamsBounded(t *testing.T) {
	t.Parallel()
	d, _ := newClocked(10, time.Hour)
	srv := httptest.NewServer(d)
	defer srv.Close()
	defer d.Close()
	var bodies []io.Closer
	defer func() {
		for _, b := range bodies {
			_ = b.Close()
		}
	}()
	for i := range maxStreams {
		resp, err := http.Get(srv.URL + "/ui/events")
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %d answered %d", i, resp.StatusCode)
		}
		readEvent(t, bufio.NewReader(resp.Body))
	}
	resp, err := http.Get(srv.URL + "/ui/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("stream %d answered %d, want 503 with Retry-After", maxStreams+1, resp.StatusCode)
	}
}

// fill tells d n searches, each followed by a call, in 10 sessions.
func fill(d *Dashboard, c *clock, n int) {
	for i := range 10 {
		open(d, c, fmt.Sprint(i))
	}
	for i := range n {
		sess := fmt.Sprint(i % 10)
		c.add(time.Millisecond)
		d.Searched(gateway.SearchEvent{Time: c.now(), Session: sess, Query: fmt.Sprint("query ", i), Form: "keyword",
			Results: []string{"a__one", "b__two", "c__three", "d__four", "e__five"}, Total: 5})
		d.Called(gateway.CallEvent{Time: c.now(), Session: sess, Tool: "b__two", Outcome: "ok"})
	}
}

// BenchmarkSearched is what one search costs the gateway with the
// dashboard on (the ring full).
func BenchmarkSearched(b *testing.B) {
	d, c := newClocked(config1000, time.Hour)
	fill(d, c, config1000)
	ev := gateway.SearchEvent{Session: "1", Query: "send an email", Form: "keyword", Results: []string{"mail__send"}}
	b.ReportAllocs()
	for b.Loop() {
		ev.Time = c.now()
		d.Searched(ev)
	}
}

// BenchmarkState is one /ui/api/state with the default keep, full.
func BenchmarkState(b *testing.B) {
	d, c := newClocked(config1000, time.Hour)
	fill(d, c, config1000)
	b.ReportAllocs()
	for b.Loop() {
		_ = d.State()
	}
}

const config1000 = 1000

// TestEnrichChanged: the state shows the last enrichment status told; one
// equal to the last changes nothing, another moves the sequence.
func TestEnrichChanged(t *testing.T) {
	t.Parallel()
	d := New(Options{})
	if d.State().Enrich != nil {
		t.Fatal("enrichment shown before the gateway told of it")
	}
	next := time.Date(2026, 12, 4, 0, 0, 30, 0, time.UTC)
	st := gateway.EnrichStatus{State: gateway.EnrichBudgetExhausted, Reason: "today's budget is spent", Provider: "anthropic",
		Tools: 40, WithHints: 30, Day: "2026-12-03", Spent: gateway.EnrichAmount{Tools: 10, Tokens: 4000},
		Budget: gateway.EnrichAmount{Tools: 10, Tokens: 100_000}, Today: gateway.EnrichCounts{Written: 8, Rejected: 2},
		NextRun: &next, LastError: "the model's answer was refused for 2 tools"}
	d.EnrichChanged(st)
	got := d.State()
	want := Enrich{State: "budget_exhausted", Reason: "today's budget is spent", Provider: "anthropic", Tools: 40, WithHints: 30,
		Day: "2026-12-03", SpentTools: 10, SpentTokens: 4000, BudgetTools: 10, BudgetTokens: 100_000, Written: 8, Rejected: 2,
		NextRun: next, LastError: "the model's answer was refused for 2 tools"}
	if got.Enrich == nil || *got.Enrich != want {
		t.Fatalf("enrich %+v, want %+v", got.Enrich, want)
	}
	d.EnrichChanged(st)
	if d.State().Seq != got.Seq {
		t.Error("an equal status moved the sequence")
	}
	st.Progress = &gateway.EnrichProgress{Done: 3, Total: 9}
	st.State = gateway.EnrichRunning
	d.EnrichChanged(st)
	if s := d.State(); s.Seq == got.Seq || s.Enrich.Done != 3 || s.Enrich.Total != 9 {
		t.Errorf("a new status: seq %d, enrich %+v", s.Seq, s.Enrich)
	}
}

// TestDeferredBy checks who is said to keep tools from a session's model,
// and what the model is said to see.
func TestDeferredBy(t *testing.T) {
	t.Parallel()
	defers := []SeenClient{{Client: "claude-code 2", Defers: true}}
	mixed := append(slices.Clone(defers), SeenClient{Client: "other 1"})
	for _, tc := range []struct {
		name      string
		ev        gateway.SessionEvent
		clients   []SeenClient
		wantBy    string
		wantModel int
	}{
		{"search exposure: the gateway", gateway.SessionEvent{Exposure: "search", FullTokens: 1000, SentTokens: 100}, nil, "gateway", 100},
		{"full, a client that defers", gateway.SessionEvent{Exposure: "full", FullTokens: 1000, SentTokens: 1000, ClientDefers: true, ClientTokens: 80}, nil, "client", 80},
		{"full, a client that does not", gateway.SessionEvent{Exposure: "full", FullTokens: 1000, SentTokens: 1000, ClientTokens: 80}, nil, "", 1000},
		{"search, a client that defers: the gateway's list counts", gateway.SessionEvent{Exposure: "search", FullTokens: 1000, SentTokens: 100, ClientDefers: true}, nil, "gateway", 100},
		{"full, an estimate over the list is not a saving", gateway.SessionEvent{Exposure: "full", FullTokens: 10, SentTokens: 10, ClientDefers: true, ClientTokens: 12}, nil, "", 10},
		{"shared in full, every client defers", gateway.SessionEvent{Shared: true, Exposure: "full", FullTokens: 1000, SentTokens: 1000, ClientTokens: 80}, defers, "client", 80},
		{"shared in full, one client does not", gateway.SessionEvent{Shared: true, Exposure: "full", FullTokens: 1000, SentTokens: 1000, ClientTokens: 80}, mixed, "", 1000},
		{"shared in full, no request yet", gateway.SessionEvent{Shared: true, Exposure: "full", FullTokens: 1000, SentTokens: 1000, ClientTokens: 80}, nil, "", 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			by, model := deferredBy(tc.ev, tc.clients)
			if by != tc.wantBy || model != tc.wantModel {
				t.Errorf("deferred by %q, model sees %d; want %q, %d", by, model, tc.wantBy, tc.wantModel)
			}
		})
	}
}

// TestClientsSeen checks what a shared server's clients show: each once
// by name and protocol, its requests counted, the latest first, at most
// maxSeenClients, and nothing for a server never told of.
func TestClientsSeen(t *testing.T) {
	t.Parallel()
	d, c := newClocked(100, time.Hour)
	d.ClientSeen(gateway.ClientEvent{Time: c.now(), Session: "7", Client: "ghost 1"})
	d.SessionChanged(gateway.SessionEvent{Time: c.now(), Session: "7", Shared: true, Exposure: "full"})
	for i := range maxSeenClients + 5 {
		c.add(time.Second)
		d.ClientSeen(gateway.ClientEvent{Time: c.now(), Session: "7", Client: fmt.Sprint("client-", i), Protocol: "2026-07-28"})
	}
	c.add(time.Second)
	seq := d.State().Seq
	d.ClientSeen(gateway.ClientEvent{Time: c.now(), Session: "7", Client: "client-10", Protocol: "2026-07-28"})
	st := d.State()
	if st.Seq != seq {
		t.Errorf("another request of a known client moved the state (seq %d → %d)", seq, st.Seq)
	}
	got := st.Sessions[0].Clients
	if len(got) != maxSeenClients {
		t.Fatalf("%d clients kept, want %d", len(got), maxSeenClients)
	}
	if got[0].Client != "client-10" || got[0].Requests != 2 || !got[0].Last.After(got[0].First) {
		t.Errorf("the latest client %+v: want client-10, with 2 requests", got[0])
	}
	for _, s := range got {
		if s.Client == "ghost 1" || s.Client == "client-0" {
			t.Errorf("kept %q: want the server's unknown client and the least recent dropped", s.Client)
		}
	}
}
