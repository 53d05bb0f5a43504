package gateway

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/core/catalog/demo"
	"github.com/toolsearch/toolsearch/core/search"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/gateway/upstream"
)

// demoCache writes a config of the demo catalog's servers (lazy, so none
// starts) with their manifests cached in a state directory.
func demoCache(t *testing.T) (cfgPath, state string) {
	t.Helper()
	snap := demo.Snapshot()
	state = t.TempDir()
	servers := map[string]any{}
	for _, s := range snap.Servers() {
		e := roleServer(t, "echo")
		e["lazy"] = true
		servers[s.Key] = e
	}
	cfgPath = writeConfig(t, servers, map[string]any{"stateDir": state})
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, cs := range cfg.Servers {
		srv, _ := snap.Server(cs.Key)
		m := &upstream.Manifest{Key: cs.Key, Fingerprint: upstream.Fingerprint(cs), SavedAt: time.Now(), Tokens: srv.Tokens()}
		for _, tl := range srv.Tools {
			m.Tools = append(m.Tools, tl.Raw)
		}
		if err := saveManifest(state, m); err != nil {
			t.Fatal(err)
		}
	}
	return cfgPath, state
}

func newFromConfig(t *testing.T, cfgPath string) *Gateway {
	t.Helper()
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestSavedIndex follows the saved search index through starts: built and
// saved by the running gateway once its catalog settles, loaded by the next
// start (answering as a built index does), rebuilt when a manifest changed
// and ignored when damaged.
func TestSavedIndex(t *testing.T) {
	quiet := indexSaveQuiet
	indexSaveQuiet = 50 * time.Millisecond
	t.Cleanup(func() { indexSaveQuiet = quiet })
	cfgPath, state := demoCache(t)
	idx := filepath.Join(state, "index.bin")

	// First start: nothing saved; the running gateway saves it.
	g := newFromConfig(t, cfgPath)
	if g.savedIndex != nil {
		t.Fatal("an index was loaded before any was saved")
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.Start(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(idx); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the index was not saved within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopGateway(t, g, cancel)

	// Second start: loaded, and it answers as a built index does.
	g = newFromConfig(t, cfgPath)
	if g.savedIndex == nil {
		t.Fatal("the saved index was not loaded")
	}
	v := g.cur.Load()
	built := search.Build(v.snap)
	for _, q := range []string{"create a pull request", "send a message", "select:codehost/create_issue", "^list_.*", "nothing matches zzqx"} {
		a, errA := v.index.Search(context.Background(), search.Request{Query: q})
		b, errB := built.Search(context.Background(), search.Request{Query: q})
		if (errA == nil) != (errB == nil) || describeHits(a) != describeHits(b) {
			t.Errorf("%q: loaded index gives %s (%v), built %s (%v)", q, describeHits(a), errA, describeHits(b), errB)
		}
	}

	// A manifest changed while the gateway was down: rebuilt, not loaded.
	if err := saveManifest(state, shorterManifest(t, state, "codehost")); err != nil {
		t.Fatal(err)
	}
	if g := newFromConfig(t, cfgPath); g.savedIndex != nil {
		t.Error("a saved index was loaded for a changed catalog")
	}

	// Damaged: ignored, the gateway builds and still answers.
	if err := os.WriteFile(idx, []byte("toolsearch index\ngarbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	g = newFromConfig(t, cfgPath)
	if g.savedIndex != nil {
		t.Error("a damaged index was loaded")
	}
	if res, err := g.cur.Load().index.Search(context.Background(), search.Request{Query: "create a pull request"}); err != nil || len(res.Hits) == 0 {
		t.Errorf("search after a damaged index: %v, %d hits", err, len(res.Hits))
	}
}

// shorterManifest returns the manifest cached in state for server key,
// without its first tool.
func shorterManifest(t *testing.T, state, key string) *upstream.Manifest {
	t.Helper()
	data, err := os.ReadFile(manifestPath(state, key))
	if err != nil {
		t.Fatal(err)
	}
	var m upstream.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	m.Tools = m.Tools[1:]
	return &m
}

func describeHits(r search.Result) string {
	var s string
	for _, h := range r.Hits {
		s += h.Tool.ID() + " "
	}
	return s
}

// TestIndexSettles checks that an index split by an update is replaced by
// one built whole once the catalog settles, answering as before.
func TestIndexSettles(t *testing.T) {
	quiet := indexSaveQuiet
	indexSaveQuiet = 50 * time.Millisecond
	t.Cleanup(func() { indexSaveQuiet = quiet })
	cfgPath, state := demoCache(t)
	g := newFromConfig(t, cfgPath)
	ctx, cancel := context.WithCancel(context.Background())
	g.Start(ctx)
	defer stopGateway(t, g, cancel)

	if err := g.publish(t.Context(), g.ups()["codehost"], shorterManifest(t, state, "codehost"), true); err != nil {
		t.Fatal(err)
	}
	split := g.cur.Load()
	if split.index.Compact() {
		t.Fatal("the index is compact right after an update: the test checks nothing")
	}
	deadline := time.Now().Add(10 * time.Second)
	for !g.cur.Load().index.Compact() {
		if time.Now().After(deadline) {
			t.Fatal("the index was not rebuilt whole within 10s of the catalog settling")
		}
		time.Sleep(20 * time.Millisecond)
	}
	v := g.cur.Load()
	if v.snap != split.snap {
		t.Fatal("the catalog changed under the test")
	}
	for _, q := range []string{"create a pull request", "send a message", "list open issues", "nothing matches zzqx"} {
		a, errA := v.index.Search(context.Background(), search.Request{Query: q})
		b, errB := split.index.Search(context.Background(), search.Request{Query: q})
		if (errA == nil) != (errB == nil) || describeHits(a) != describeHits(b) {
			t.Errorf("%q: whole index gives %s (%v), split index %s (%v)", q, describeHits(a), errA, describeHits(b), errB)
		}
	}
}
