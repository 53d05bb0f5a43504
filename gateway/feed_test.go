package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
