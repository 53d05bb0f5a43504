package dashboard_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestBrowserSessions opens each page afresh in headless Chromium after
// real clients searched and called through a real gateway in front of
// the memory server of node_modules, and ended: a session that searched
// over stdio, a Claude Code–named 2026-07-28 connection over stdio in
// full exposure (which defers the tools itself), and a Claude Code–named
// 2026-07-28 client over HTTP (no session, served by the shared server).
// The searches page shows the searches, not "Loading…"; the clients page
// shows the sessions closed, each client by name and version; the
// economy page counts what the clients' own tool search saved, labelled
// as an estimate. Screenshots go under $TOOLSEARCH_ARTIFACTS/dashboard.
func TestBrowserSessions(t *testing.T) {
	chrome := findChromium()
	if chrome == "" {
		t.Skip("no Chromium on PATH: install it (apt-get install -y chromium) to run the dashboard in a real browser")
	}
	r := newRig(t, rigOptions{npm: true, exposure: "auto"})
	dir := os.Getenv(artifactsEnv)
	if dir == "" {
		dir = t.TempDir()
	} else {
		dir = filepath.Join(dir, "dashboard")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}

	searcher := r.stdioIn(t, "search", "searcher", "3.1", "2025-11-25")
	found := search(t, searcher, "create entities in the knowledge graph")
	i := slices.IndexFunc(found, func(n string) bool { return strings.HasSuffix(n, "create_entities") })
	if i < 0 {
		t.Fatalf("the search found %v", found)
	}
	entities := map[string]any{"entities": []any{map[string]any{"name": "Ada", "entityType": "person", "observations": []any{"wrote a program"}}}}
	call(t, searcher, "call_tool", map[string]any{"name": found[i], "arguments": entities})
	closeNow(t, searcher)

	cc := r.stdioIn(t, "auto", "claude-code", "2.1.332", "2026-07-28")
	call(t, cc, listed(t, cc, "read_graph"), map[string]any{})
	closeNow(t, cc)

	shared := r.clientAs(t, "claude-code", "2.1.400", "2026-07-28")
	call(t, shared, listed(t, shared, "read_graph"), map[string]any{})

	eventually(t, "the dashboard shows both sessions closed", 10*time.Second, func() bool {
		closed := 0
		for _, s := range r.state(t).Sessions {
			if !s.Open && !s.Shared {
				closed++
			}
		}
		return closed == 2
	})

	ctx := startBrowser(t, chrome, 60*time.Second)
	eval := func(expr string) bool { t.Helper(); return evalBool(ctx, t, expr) }
	text := func() string { t.Helper(); return pageText(ctx, t) }
	open := func(page string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(1366, 768), chromedp.Navigate(r.url+"/ui/"+page)); err != nil {
			t.Fatalf("opening %s: %v", page, err)
		}
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("page").dataset.seq !== undefined`,
			chromedp.WithPollingTimeout(10*time.Second))); err != nil {
			t.Fatalf("the %s page never rendered: %v\n%s", page, err, text())
		}
	}
	shot := func(page string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot of %s: %v", page, err)
		}
		if err := os.WriteFile(filepath.Join(dir, "sessions-"+page+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	open("searches")
	page := text()
	for _, want := range []string{"create entities in the knowledge graph", found[i], "called", "searcher 3.1",
		"claude-code 2.1.332", "claude-code 2.1.400"} { // the calls no search led to, by client
		if !strings.Contains(page, want) {
			t.Errorf("the searches page does not show %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "Loading…") {
		t.Errorf("the searches page still says Loading…")
	}
	shot("searches")

	open("clients")
	for _, c := range []struct{ client, state string }{
		{"searcher 3.1", "closed"}, {"claude-code 2.1.332", "closed"}, {"claude-code 2.1.400", "shared"},
	} {
		expr := fmt.Sprintf(`[...document.querySelectorAll("tr[data-session]")].some(tr => tr.dataset.state === %q &&
			tr.querySelector("td.client").textContent.includes(%q) && tr.querySelector(".badge.b-"+%q) !== null)`, c.state, c.client, c.state)
		if !eval(expr) {
			t.Errorf("the clients page has no %s row of %s:\n%s", c.state, c.client, text())
		}
	}
	shot("clients")

	open("economy")
	saved := func(id string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.getElementById(`+fmt.Sprintf("%q", id)+`) || {}).textContent || ""`))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if got := saved("saved-client"); got == "" || strings.HasPrefix(got, "≈ 0 ") {
		t.Errorf("the saving of the clients' own tool search shows %q, want more than 0 %%:\n%s", got, text())
	}
	if got := saved("saved-total"); got == "" || strings.HasPrefix(got, "0 ") {
		t.Errorf("the total saving shows %q, want more than 0 %%", got)
	}
	if !strings.Contains(text(), "deferred by the client's own tool search (estimate)") {
		t.Errorf("the economy page does not say which saving is the client's, and an estimate:\n%s", text())
	}
	for _, s := range r.state(t).Sessions {
		if s.Client != "claude-code 2.1.332" {
			continue
		}
		cell := fmt.Sprintf(`(document.querySelector('td[data-saved=%q]') || {}).textContent || ""`, s.ID)
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](cell))
		if err != nil {
			t.Fatal(err)
		}
		if v == "" || strings.HasPrefix(v, "0 ") {
			t.Errorf("Claude Code's session #%s shows %q saved, want more than 0 %%", s.ID, v)
		}
	}
	shot("economy")
	t.Logf("screenshots in %s", dir)
}

// closeNow ends a client's connection, as a client that exits does.
func closeNow(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	if err := cs.Close(); err != nil {
		t.Logf("closing: %v", err)
	}
}
