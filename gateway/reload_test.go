package gateway

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/core/catalog/demo"
	"github.com/toolsearch/toolsearch/core/policy"
	"github.com/toolsearch/toolsearch/core/search"
	"github.com/toolsearch/toolsearch/gateway/config"
)

// echoAs is a config entry of the echo role whose env tells instances
// apart (and, changed, makes a changed entry).
func echoAs(t testing.TB, tag string) map[string]any {
	s := roleServer(t, "echo")
	s["env"].(map[string]string)["TOOLSEARCH_TEST_TAG"] = tag
	return s
}

// reloadFrom reads a config written by writeConfig and reloads g with it.
func reloadFrom(t *testing.T, g *Gateway, servers, gw map[string]any) Diff {
	t.Helper()
	cfg, err := config.Load(writeConfig(t, servers, gw))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := g.Reload(ctx, cfg)
	if err != nil {
		t.Fatalf("reload: %v", err)
	}
	return d
}

// TestReload starts four real servers, connects a 2025-11-25 session and
// a 2026-07-28 client listening on subscriptions/listen, and reloads a
// configuration that removes one server, adds one, changes one's env and
// denies a tool of the fourth by a new global policy: the removed server
// stops (its process exits) and its tools leave every list and route; the
// added and changed ones start; the unchanged one keeps its process and
// its session; both clients are told.
func TestReload(t *testing.T) {
	t.Parallel()
	v1 := map[string]any{"keep": echoAs(t, "keep"), "gone": echoAs(t, "gone"), "edit": echoAs(t, "edit-1")}
	g := startGateway(t, writeConfig(t, v1, map[string]any{"http": map[string]any{"exposures": []string{"full", "dynamic"}}}))
	for k := range v1 {
		waitState(t, g, k, 20*time.Second, StateReady)
	}
	srv := serveHTTP(t, g.Handler(""))
	old := connectHTTP(t, srv.URL+"/mcp/full", nil)
	modern := connectEra(t, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp/full"}, era2026)
	if names := old.toolNames(t); !slices.Contains(names, "gone__echo") || !slices.Contains(names, "keep__deploy") {
		t.Fatalf("before the reload the list is %v", names)
	}
	keep := g.ups()["keep"]
	keepSession, keepProc := keep.Connection()
	keepPid := keepProc.Pid()
	gone := g.ups()["gone"]
	_, goneProc := gone.Connection()
	gonePid := goneProc.Pid()
	changedBefore := old.changed.Load()
	for len(modern.changed) > 0 { // notifications of the servers' first starts
		<-modern.changed
	}

	v2 := map[string]any{"keep": echoAs(t, "keep"), "edit": echoAs(t, "edit-2"), "fresh": echoAs(t, "fresh")}
	d := reloadFrom(t, g, v2, map[string]any{"http": map[string]any{"exposures": []string{"full", "dynamic"}},
		"policy": map[string]any{"deny": []string{"keep/deploy"}}})
	want := Diff{Added: []string{"fresh"}, Removed: []string{"gone"}, Changed: []string{"edit"}, Unchanged: []string{"keep"}, Policy: true}
	if !slices.Equal(d.Added, want.Added) || !slices.Equal(d.Removed, want.Removed) || !slices.Equal(d.Changed, want.Changed) ||
		!slices.Equal(d.Unchanged, want.Unchanged) || d.Policy != want.Policy || len(d.Unapplied) != 0 {
		t.Fatalf("diff %+v, want %+v", d, want)
	}
	if s := d.String(); !strings.Contains(s, "added fresh") || !strings.Contains(s, "removed gone") || !strings.Contains(s, "restarted edit") {
		t.Errorf("diff text %q", s)
	}
	waitState(t, g, "fresh", 20*time.Second, StateReady)
	waitState(t, g, "edit", 20*time.Second, StateReady)

	var keys []string
	for _, st := range g.Statuses() {
		keys = append(keys, st.Key)
	}
	if !slices.Equal(keys, []string{"edit", "fresh", "keep"}) {
		t.Errorf("statuses of %v after the reload", keys)
	}
	keepNow, keepProcNow := keep.Connection()
	sameSession := keepNow == keepSession && keepProcNow != nil && keepProcNow.Pid() == keepPid
	if g.ups()["keep"] != keep || !sameSession || keep.Status().Restarts != 0 {
		t.Error("the unchanged server was restarted")
	}
	select {
	case <-gone.Done():
	default:
		t.Error("the removed server still runs")
	}
	if runtime.GOOS != "windows" {
		waitFor(t, "the removed server's process to exit", 10*time.Second, func() bool {
			p, err := os.FindProcess(gonePid)
			return err != nil || p.Signal(syscall.Signal(0)) != nil
		})
	}

	waitFor(t, "list_changed on the 2025-11-25 session", 10*time.Second, func() bool { return old.changed.Load() > changedBefore })
	select {
	case meta := <-modern.changed:
		if _, ok := meta[mcp.MetaKeySubscriptionID]; !ok {
			t.Errorf("the 2026-07-28 notification's _meta %v lacks the subscription id", meta)
		}
	case <-time.After(10 * time.Second):
		t.Error("no tools/list_changed on the 2026-07-28 listen stream after the reload")
	}
	var names []string
	waitFor(t, "the new list", 10*time.Second, func() bool {
		names = old.toolNames(t)
		return slices.Contains(names, "fresh__echo") && slices.Contains(names, "edit__echo")
	})
	for _, absent := range []string{"gone__echo", "keep__deploy"} {
		if slices.Contains(names, absent) {
			t.Errorf("%s is still listed after the reload: %v", absent, names)
		}
	}
	if got := modern.list(t); !slices.Contains(got, "fresh__echo") || slices.Contains(got, "gone__echo") || slices.Contains(got, "keep__deploy") {
		t.Errorf("the 2026-07-28 list after the reload: %v", got)
	}

	tests := []struct {
		tool    string
		wantErr bool
	}{
		{"fresh__echo", false},
		{"edit__echo", false},
		{"keep__echo", false},
		{"gone__echo", true},   // its server was removed
		{"keep__deploy", true}, // denied by the new policy
	}
	for _, tc := range tests {
		text, isErr := old.call(t, tc.tool, map[string]any{"text": "hi"})
		if isErr != tc.wantErr {
			t.Errorf("call %s: error %v (%s), want error %v", tc.tool, isErr, text, tc.wantErr)
		}
	}
	for _, q := range []string{"select:gone__echo", "select:keep__deploy"} {
		res, err := g.Search(context.Background(), q, 5)
		if err != nil || len(res.Hits) != 0 {
			t.Errorf("search %q after the reload: %v %v", q, res.Hits, err)
		}
	}
}

// TestReloadRefused: a configuration the gateway cannot apply is refused
// with an error naming the problem, and the one in force keeps serving.
func TestReloadRefused(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, map[string]any{"echo": roleServer(t, "echo")}, nil)
	g := startGateway(t, path)
	waitState(t, g, "echo", 20*time.Second, StateReady)
	bad, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	bad.Gateway.Policy.Deny = []string{"  "}
	bad.Servers = nil
	static, err := New(nil, Options{Static: demo.Snapshot()})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		g    *Gateway
		cfg  *config.Config
		want string
	}{
		{"no configuration", g, nil, "no configuration"},
		{"a policy that does not compile", g, bad, "empty pattern"},
		{"a gateway serving a static catalog", static, bad, "static catalog"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.g.Reload(context.Background(), tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("reload: %v, want an error saying %q", err, tc.want)
			}
		})
	}
	if st := waitState(t, g, "echo", time.Second, StateReady); st.Restarts != 0 {
		t.Errorf("a refused reload touched the server: %+v", st)
	}
	if _, err := resolveTool(g, "echo"); err != nil {
		t.Errorf("after refused reloads: %v", err)
	}
}

// TestReloadAddsEmptySection: a reload that only adds an empty
// "toolsearch" object to a file that had none changes nothing, and says
// no setting waits for a restart.
func TestReloadAddsEmptySection(t *testing.T) {
	t.Parallel()
	servers := map[string]any{"echo": roleServer(t, "echo")}
	g := startGateway(t, writeConfig(t, servers, nil))
	waitState(t, g, "echo", 20*time.Second, StateReady)
	if d := reloadFrom(t, g, servers, map[string]any{}); !d.Empty() || len(d.Unapplied) != 0 {
		t.Errorf("adding an empty toolsearch object: %+v (%s)", d, d.String())
	}
}

// TestReloadUnapplied: settings read only at start are named in the diff
// and keep their values; a reload that changes nothing says so.
func TestReloadUnapplied(t *testing.T) {
	t.Parallel()
	servers := map[string]any{"echo": roleServer(t, "echo")}
	g := startGateway(t, writeConfig(t, servers, map[string]any{"exposure": "full"}))
	waitState(t, g, "echo", 20*time.Second, StateReady)
	if d := reloadFrom(t, g, servers, map[string]any{"exposure": "full"}); !d.Empty() || !slices.Equal(d.Unchanged, []string{"echo"}) {
		t.Errorf("the same configuration again: %+v", d)
	}
	d := reloadFrom(t, g, servers, map[string]any{"exposure": "search", "limits": map[string]any{"maxResults": 9}})
	if !slices.Equal(d.Unapplied, []string{"exposure", "limits"}) || len(d.Changed) != 0 {
		t.Errorf("diff %+v, want exposure and limits unapplied", d)
	}
	if !strings.Contains(d.String(), "toolsearch.exposure") {
		t.Errorf("diff text %q does not name the setting", d.String())
	}
	if g.cfg.Gateway.Exposure != "full" || g.cfg.Gateway.Limits.MaxResults == 9 {
		t.Error("an unapplied setting changed")
	}
}

// TestReloadBeforeStart: servers a reload adds before Start start with
// Start.
func TestReloadBeforeStart(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load(writeConfig(t, map[string]any{}, nil))
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(cfg, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	next, err := config.Load(writeConfig(t, map[string]any{"echo": roleServer(t, "echo")}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if d, err := g.Reload(context.Background(), next); err != nil || !slices.Equal(d.Added, []string{"echo"}) {
		t.Fatalf("reload: %+v %v", d, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.Start(ctx)
	t.Cleanup(func() { stopGateway(t, g, cancel) })
	waitState(t, g, "echo", 20*time.Second, StateReady)
}

// TestVisibleFollowsPublishedView: what a client may see is the policy of
// the published view, read alike by Visible, search and /healthz. A reload
// puts its policy in force and then publishes a view named by it; between
// the two, every path still shows the old view, and after, every path the
// new one.
func TestVisibleFollowsPublishedView(t *testing.T) {
	t.Parallel()
	g, err := New(nil, Options{Static: demo.Snapshot()})
	if err != nil {
		t.Fatal(err)
	}
	tool := g.Snapshot().Tools()[0]
	deny, err := policy.New(policy.Rules{Deny: []string{tool.Server + "/*"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := serveHTTP(t, g.Handler("search"))
	healthTools := func() int {
		_, body := get(t, srv.URL, "/healthz")
		var out struct {
			Tools int `json:"tools"`
		}
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			t.Fatalf("/healthz: %v: %s", err, body)
		}
		return out.Tools
	}
	found := func() bool {
		res, err := g.Search(t.Context(), "select:"+tool.Name, 5)
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(res.Hits, func(h search.Hit) bool { return h.Tool == tool })
	}
	before := healthTools()
	if !g.Visible(tool) || !found() || before != len(g.Snapshot().Tools()) {
		t.Fatalf("before: visible %v, found %v, /healthz tools %d of %d", g.Visible(tool), found(), before, len(g.Snapshot().Tools()))
	}

	g.pol.Store(deny) // in force, not yet published
	if !g.Visible(tool) || !found() || healthTools() != before {
		t.Errorf("policy stored, view not renamed: visible %v, found %v, /healthz tools %d (want the old view's %d)",
			g.Visible(tool), found(), healthTools(), before)
	}

	g.renameView()
	denied := 0
	for _, x := range g.Snapshot().Tools() {
		if x.Server == tool.Server {
			denied++
		}
	}
	if g.Visible(tool) || found() || healthTools() != before-denied {
		t.Errorf("view renamed: visible %v, found %v, /healthz tools %d (want %d)", g.Visible(tool), found(), healthTools(), before-denied)
	}
}
