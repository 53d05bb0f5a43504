package gateway

import (
	"net/http"
	"net/http/httptest"
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
