package gateway

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toolsearch/toolsearch/gateway/config"
)

// TestNoDashboard checks that a gateway made without Options.UI serves
// nothing at /ui and has no feed to tell.
func TestNoDashboard(t *testing.T) {
	t.Parallel()
	g, err := New(config.Default(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if g.feed != nil {
		t.Fatal("a gateway without Options.Feed has a feed")
	}
	h := g.Handler("")
	for _, path := range []string{"/ui", "/ui/servers", "/ui/api/state", "/ui/events"} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil)
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusNotFound {
			t.Errorf("GET %s answered %d without a dashboard, want 404", path, rec.Code)
		}
	}
}

// TestClip: a client's text is kept within its bound, cut between two
// runes and marked with the size it had.
func TestClip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   string
		n    int
		want string
	}{
		{"within the bound", "hello", 5, "hello"},
		{"empty", "", 5, ""},
		{"cut", "hello world", 5, "hello… (11 bytes)"},
		{"cut inside a rune", "aéé", 2, "a… (5 bytes)"},
		{"cut after a rune", "aéé", 3, "aé… (5 bytes)"},
		{"invalid UTF-8 within the bound", "a\xffb", 5, "a\uFFFDb"},
		{"invalid UTF-8 cut", "\xff\xfeabc", 3, "a… (5 bytes)"},
		{"nothing kept", "éé", 1, "… (4 bytes)"},
	} {
		if got := clip(tc.in, tc.n); got != tc.want {
			t.Errorf("%s: clip(%q, %d) = %q, want %q", tc.name, tc.in, tc.n, got, tc.want)
		}
	}
	list := []string{"a", "b", "ccccc", "d"}
	if got := clipAll(list, 2, 3); strings.Join(got, "|") != "a|b|cc… (5 bytes)|… (1 more)" {
		t.Errorf("clipAll = %q", got)
	}
	if clipAll(nil, 2, 3) != nil {
		t.Error("clipAll(nil) is not nil")
	}
}

// TestExcerpt: a description's excerpt is its words joined by single
// spaces, cut after excerptRunes runes and marked as cut, whatever its
// length, white space or bytes.
func TestExcerpt(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("word ", 200)
	for _, tc := range []struct {
		name, in string
	}{
		{"empty", ""},
		{"white space only", " \t\n "},
		{"short", "Create an issue."},
		{"runs of white space", "  Create\tan\n\n issue  in   a repository. "},
		{"exactly the bound", strings.Repeat("é", excerptRunes)},
		{"one rune over", strings.Repeat("é", excerptRunes+1)},
		{"a space at the bound", strings.Repeat("a", excerptRunes) + " b"},
		{"long", long},
		{"long without spaces", strings.Repeat("x", 10*excerptRunes)},
		{"not UTF-8, short", "a\xffb \xfe c"},
		{"not UTF-8, long", strings.Repeat("\xff", excerptRunes+5)},
	} {
		want := strings.Join(strings.Fields(tc.in), " ")
		if r := []rune(want); len(r) > excerptRunes {
			want = string(r[:excerptRunes]) + "…"
		}
		if got := excerpt(tc.in); got != want {
			t.Errorf("%s: excerpt = %q, want %q", tc.name, got, want)
		}
		if n := utf8.RuneCountInString(excerpt(tc.in)); n > excerptRunes+1 {
			t.Errorf("%s: excerpt has %d runes, more than %d and the mark", tc.name, n, excerptRunes)
		}
	}
}

// serversFeed records the server states a gateway tells its feed, slowly,
// so that changes come while a state is being told. With hold set, the
// first state told waits until hold is closed, once entered is closed.
type serversFeed struct {
	enrichFeed
	mu            sync.Mutex
	told          int
	last          []ServerView
	delay         time.Duration
	hold, entered chan struct{}
	once          sync.Once
}

func (f *serversFeed) ServersChanged(s []ServerView) {
	if f.hold != nil {
		f.once.Do(func() {
			close(f.entered)
			<-f.hold
		})
	}
	time.Sleep(f.delay)
	f.mu.Lock()
	f.told++
	f.last = s
	f.mu.Unlock()
}

// states returns the state of each server in the last state told.
func (f *serversFeed) states() map[string]State {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]State{}
	for _, s := range f.last {
		out[s.Key] = s.State
	}
	return out
}

// feedGateway is a gateway of n servers that are never started, telling
// feed.
func feedGateway(t *testing.T, n int, feed Feed) *Gateway {
	t.Helper()
	servers := map[string]any{}
	for i := range n {
		servers[fmt.Sprintf("s%d", i)] = map[string]any{"command": "never-started"}
	}
	cfg, err := config.Load(writeConfig(t, servers, nil))
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(cfg, Options{Feed: feed})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestFeedServersCoalesced: server states changed by many goroutines at
// once are told in fewer states than changes, and the last state told is
// every server's last.
func TestFeedServersCoalesced(t *testing.T) {
	t.Parallel()
	const servers, changes = 8, 40
	feed := &serversFeed{delay: time.Millisecond}
	g := feedGateway(t, servers, feed)
	var wg sync.WaitGroup
	for _, k := range g.keys() {
		u := g.ups()[k]
		wg.Go(func() {
			for i := range changes {
				u.SetState([]State{StateStarting, StateRestarting}[i%2], nil)
			}
			u.SetState(StateReady, nil)
		})
	}
	wg.Wait()
	waitFor(t, "every server ready in the state told", 10*time.Second, func() bool {
		st := feed.states()
		for _, k := range g.keys() {
			if st[k] != StateReady {
				return false
			}
		}
		return true
	})
	feed.mu.Lock()
	told := feed.told
	feed.mu.Unlock()
	if told >= servers*(changes+1) {
		t.Errorf("%d states told for %d changes: none was coalesced", told, servers*(changes+1))
	}
}

// TestFeedServersChangeWhileTelling: a change made while another is being
// told returns at once, and is told after it.
func TestFeedServersChangeWhileTelling(t *testing.T) {
	t.Parallel()
	feed := &serversFeed{hold: make(chan struct{}), entered: make(chan struct{})}
	g := feedGateway(t, 2, feed)
	first, second := g.ups()["s0"], g.ups()["s1"]
	first.SetState(StateReady, nil)
	<-feed.entered
	if !bounded(t, "a change while another is told", 10*time.Second, func() { second.SetState(StateFailed, nil) }) {
		return
	}
	close(feed.hold)
	waitFor(t, "the change made while another was told", 10*time.Second, func() bool {
		st := feed.states()
		return st["s0"] == StateReady && st["s1"] == StateFailed
	})
}
