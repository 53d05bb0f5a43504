package dashboard_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// artifactsEnv names the folder the browser test saves its screenshots
// under (a temporary folder when unset), so that CI can keep them.
const artifactsEnv = "TOOLSEARCH_ARTIFACTS"

// findChromium returns the path of a Chromium or Chrome, or "".
func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// viewport is a screen size the pages are checked and photographed at.
type viewport struct {
	name          string
	width, height int64
	mobile        bool
}

var viewports = []viewport{{"laptop", 1366, 768, false}, {"phone", 390, 844, true}}

// TestBrowser loads every page in headless Chromium against a gateway with
// real upstream servers (everything and memory from node_modules, and a
// hostile one whose tool description, title and stderr are markup),
// checks what each shows, clicks through them, sees a live update arrive,
// checks that no markup from upstream or from a query runs, and saves a
// screenshot of each page at laptop and phone sizes.
func TestBrowser(t *testing.T) {
	chrome := findChromium()
	if chrome == "" {
		t.Skip("no Chromium on PATH: install it (apt-get install -y chromium) to run the dashboard in a real browser")
	}
	r := newRig(t, rigOptions{npm: true, enrich: true})
	dir := os.Getenv(artifactsEnv)
	if dir == "" {
		dir = t.TempDir()
	} else {
		dir = filepath.Join(dir, "dashboard")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}

	// What a client did before the page was opened: a query that is
	// markup, a search that led to a call, and one that found nothing.
	cs := r.client(t, "browser-client")
	search(t, cs, attack)
	found := search(t, cs, "echo back the message")
	i := slices.IndexFunc(found, func(n string) bool { return strings.HasSuffix(n, "__echo") })
	if i < 0 {
		t.Fatalf("searching for echo found %v", found)
	}
	echo := found[i]
	call(t, cs, "call_tool", map[string]any{"name": echo, "arguments": map[string]any{"message": "hello from the browser"}})
	search(t, cs, "zzqx nothing answers this")
	search(t, cs, "store entities in the knowledge graph memory")

	ctx := startBrowser(t, chrome, 40*time.Second)

	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	eval := func(expr string) bool { t.Helper(); return evalBool(ctx, t, expr) }
	text := func() string { t.Helper(); return pageText(ctx, t) }
	waitText := func(what, s string) {
		t.Helper()
		expr := fmt.Sprintf(`document.getElementById("page").textContent.includes(%q)`, s)
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
			t.Fatalf("%s: the page never showed %q: %v\n%s", what, s, err, text())
		}
	}
	// nothingRan checks that the markup shown was not run: no image and
	// no script were made from it, and its handlers set nothing.
	nothingRan := func(page string) {
		t.Helper()
		if eval(`window.__pwned !== undefined`) {
			t.Errorf("%s: markup from upstream ran (window.__pwned is set)", page)
		}
		if eval(`document.querySelectorAll("img, main script, main iframe").length > 0`) {
			t.Errorf("%s: markup from upstream made elements", page)
		}
	}
	shot := func(page string, vp viewport) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot of %s: %v", page, err)
		}
		if err := os.WriteFile(filepath.Join(dir, page+"-"+vp.name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	setViewport := func(vp viewport) chromedp.Action[chromedp.Void] {
		if vp.mobile {
			return chromedp.EmulateViewport(vp.width, vp.height, chromedp.EmulateScale(2), chromedp.EmulateMobile)
		}
		return chromedp.EmulateViewport(vp.width, vp.height)
	}
	pageReady := `document.getElementById("page").dataset.seq !== undefined`

	// Laptop: load the servers page, then click through the others.
	laptop := viewports[0]
	do("opening the servers page", setViewport(laptop), chromedp.Navigate(r.url+"/ui/servers"),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-server="everything"]`)))
	for _, want := range []string{"everything", "memory", "hostile", "ready", "deferred", "exposure search",
		"Render a page of markup " + attack} {
		waitText("servers", want)
	}
	if strings.Contains(text(), upstreamSecret) {
		t.Error("the servers page shows the secret the hostile server wrote to stderr")
	}
	// The enrichment panel, once every tool has hints.
	waitText("servers", "Search hints")
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`(() => { const b = document.querySelector('[data-enrich="hints"] b');
		if (!b) return false; const [w, n] = b.textContent.split(" / "); return Number(n) > 0 && w === n; })()`,
		chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("the enrichment panel never showed every tool with hints: %v\n%s", err, text())
	}
	for _, want := range []string{"idle", "tools", "tokens", "written", "openai"} {
		waitText("the enrichment panel", want)
	}
	if !eval(`[...document.querySelectorAll("pre.stderr")].some(p => p.textContent.includes("[REDACTED]") && p.textContent.includes("<script>"))`) {
		t.Errorf("the hostile server's stderr tail is not shown redacted, as text")
	}
	nothingRan("servers")
	shot("servers", laptop)

	// A marker that a full page load would lose: the pages below are
	// reached by clicks and live updates, not reloads.
	do("marking the page", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[chromedp.Void](`window.__stay = 1`)(ctx, t)
		return err
	}))
	do("clicking Clients", chromedp.Click(chromedp.CSS(`nav a[data-page="clients"]`)),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-session]`)))
	waitText("clients", "browser-client 1.0")
	waitText("clients", "search")
	if !eval(`location.pathname === "/ui/clients" && document.querySelector('nav a.current').dataset.page === "clients"`) {
		t.Error("the clients link did not lead to the clients page")
	}
	shot("clients", laptop)
	// A live update: a client that connects now shows up without a reload.
	r.client(t, "late-client")
	waitText("a live update", "late-client 1.0")
	if !eval(`window.__stay === 1`) {
		t.Error("the page reloaded instead of updating")
	}

	do("clicking Searches", chromedp.Click(chromedp.CSS(`nav a[data-page="searches"]`)),
		chromedp.WaitVisible(chromedp.CSS(`code.query`)))
	for _, want := range []string{"Queries that led to no call", "zzqx nothing answers this", attack, echo, "called", "no call", "waiting"} {
		waitText("searches", want)
	}
	nothingRan("searches")
	if strings.Contains(text(), "hello from the browser") {
		t.Error("the searches page shows a call's arguments, which are not recorded by default")
	}
	shot("searches", laptop)

	do("clicking Context economy", chromedp.Click(chromedp.CSS(`nav a[data-page="economy"]`)),
		chromedp.WaitVisible(chromedp.CSS(`svg.plot path.sent`)))
	waitText("economy", "Full lists would cost")
	if !eval(`document.querySelector("svg.plot path.full").getAttribute("d").length > 3 && Number(document.getElementById("full-total").textContent.replace(/,/g, "")) > 0`) {
		t.Error("the context economy plot has no line, or the full lists cost nothing")
	}
	shot("economy", laptop)
	if !eval(`window.__stay === 1`) {
		t.Error("clicking through reloaded the page")
	}

	// Phone: every page, loaded directly.
	phone := viewports[1]
	do("phone size", setViewport(phone))
	for _, page := range []string{"servers", "clients", "searches", "economy"} {
		do("opening "+page+" on a phone", chromedp.Navigate(r.url+"/ui/"+page))
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](pageReady, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
			t.Fatalf("the %s page did not render on a phone: %v", page, err)
		}
		if w := eval(`document.documentElement.scrollWidth <= window.innerWidth + 1`); !w {
			t.Errorf("the %s page is wider than a phone's screen", page)
		}
		nothingRan(page + " on a phone")
		shot(page, phone)
	}
	// Page after page in one tab: each shows its state. A page left (kept
	// by the browser for going back) must give its event stream's
	// connection back, or after six of them (a browser's connections to
	// one server) the next page waits forever on "Loading…".
	for i := range 10 {
		page := []string{"searches", "servers", "clients", "economy", "searches"}[i%5]
		do("opening "+page+" again", chromedp.Navigate(r.url+"/ui/"+page))
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](pageReady, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
			t.Fatalf("load %d of one tab: the %s page did not render: %v\n%s", i+1, page, err, text())
		}
	}
	eventually(t, "the pages left to give back their event streams", 10*time.Second, func() bool { return r.d.OpenStreams() <= 1 })
	t.Logf("screenshots in %s", dir)
}

// startBrowser starts the headless browser chrome (a 1366×768 window) and
// returns a context that drives it for at most timeout; the browser is
// closed when the test ends.
func startBrowser(t *testing.T, chrome string, timeout time.Duration) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1366, 768))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	if err := chromedp.Do(bctx); err != nil { // starts the browser, with no timeout of its own
		t.Fatalf("starting %s: %v", chrome, err)
	}
	ctx, cancel := context.WithTimeout(bctx, timeout)
	t.Cleanup(cancel)
	return ctx
}

// evalBool evaluates expr in the page and returns its truth.
func evalBool(ctx context.Context, t *testing.T, expr string) bool {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// pageText is the text of the page's main element.
func pageText(ctx context.Context, t *testing.T) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("page").textContent`))
	if err != nil {
		t.Fatal(err)
	}
	return v
}
