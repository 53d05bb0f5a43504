package gateway

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/core/search"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/gateway/upstream"
)

// TestServerWords: the words a free-word query names a starting server by.
func TestServerWords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key, command string
		want         []string
	}{
		{"memory", "/usr/lib/node_modules/.bin/mcp-server-memory", []string{"memory"}},
		{"gh", "npx", nil},
		{"my-db", `C:\tools\postgres-mcp.exe`, []string{"postgres"}},
		{"github", "docker", []string{"github"}},
	} {
		u := upstream.New(&config.Server{Key: tc.key, Command: tc.command}, nil, slog.Default(), nil)
		if got := serverWords(u); !slices.Equal(got, tc.want) {
			t.Errorf("serverWords(%q, %q) = %v, want %v", tc.key, tc.command, got, tc.want)
		}
	}
}

// TestTargetedServers: which query forms name a server outright.
func TestTargetedServers(t *testing.T) {
	g := &Gateway{}
	g.setServers(map[string]*upstream.Server{"github": nil, "slack": nil, "my-db": nil})
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"github", []string{"github"}},
		{" github ", []string{"github"}},
		{"github__", []string{"github"}},
		{"mcp__github", []string{"github"}},
		{"mcp__github__create_issue", []string{"github"}},
		{"github__create_issue", []string{"github"}},
		{"github/create_issue", []string{"github"}},
		{"select:github__a,slack__b,github__c", []string{"github", "slack"}},
		{"select:mcp__my-db__query, nowhere__x", []string{"my-db"}},
		{"create a github issue", nil},
		{"gith.*", nil},
		{"gitlab__x", nil},
		{"create_issue", nil},
		{"", nil},
	} {
		if got := g.targetedServers(tc.query); !slices.Equal(got, tc.want) {
			t.Errorf("targetedServers(%q) = %v, want %v", tc.query, got, tc.want)
		}
	}
}

// TestSearchWaitsForTargetedServer: a search that names a server still
// starting waits for it and finds its tools; a search that does not name it
// answers at once; a search that names a server that fails answers when it
// has failed, saying why.
func TestSearchWaitsForTargetedServer(t *testing.T) {
	t.Parallel()
	for _, query := range []string{"slow", "slow__", "mcp__slow", "slow__echo", "select:slow__echo,echo__echo", "slow echo"} {
		t.Run(query, func(t *testing.T) {
			t.Parallel()
			slow, open := gatedServer(t, "slow-start")
			g := startGateway(t, writeConfig(t, map[string]any{"slow": slow, "echo": roleServer(t, "echo")},
				map[string]any{"limits": map[string]any{"startTimeout": "60s"}}))
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()

			// Not targeted: answered while slow is held back.
			res, err := g.Search(ctx, "echo the text back", 10)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range res.Hits {
				if h.Tool.Server == "slow" {
					t.Fatalf("found %s before slow was up", h.Tool.ID())
				}
			}

			// Targeted: waits until slow is up, then finds its tools.
			type answer struct {
				res search.Result
				err error
			}
			done := make(chan answer, 1)
			go func() {
				res, err := g.Search(ctx, query, 10)
				done <- answer{res, err}
			}()
			select {
			case a := <-done:
				t.Fatalf("search %q answered while slow was held back: %d hits, %v", query, len(a.res.Hits), a.err)
			case <-time.After(300 * time.Millisecond):
			}
			open()
			var a answer
			select {
			case a = <-done:
			case <-ctx.Done():
				t.Fatalf("search %q did not answer once slow was up", query)
			}
			if a.err != nil {
				t.Fatal(a.err)
			}
			found := false
			for _, h := range a.res.Hits {
				found = found || h.Tool.Server == "slow"
			}
			if !found {
				t.Errorf("search %q after waiting found no tool of slow among %d hits", query, len(a.res.Hits))
			}
		})
	}
	// A search that finds nothing while a server is starting waits for
	// it and searches again, though its words name no server; meanwhile
	// the gateway can say what is starting and what to do.
	t.Run("nothing found waits", func(t *testing.T) {
		t.Parallel()
		slow, open := gatedServer(t, "slow-start")
		g := startGateway(t, writeConfig(t, map[string]any{"slow": slow}, map[string]any{"limits": map[string]any{"startTimeout": "60s"}}))
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		defer cancel()
		note := g.startingNote(nil)
		if !containsAll(note, "slow (starting for", "may take up to", "Search again") {
			t.Errorf("the note on a starting server = %q", note)
		}
		if g.startingNote([]string{"other"}) != "" {
			t.Error("a note on servers none of which is starting")
		}
		timer := time.AfterFunc(500*time.Millisecond, open)
		defer timer.Stop()
		start := time.Now()
		res, err := g.Search(ctx, "echo repeat", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) == 0 || res.Hits[0].Tool.Server != "slow" {
			t.Errorf("search while slow started found %d hits, none of slow's, after %v", len(res.Hits), time.Since(start))
		}
		if g.startingNote(nil) != "" {
			t.Error("a note on starting servers once all are up")
		}
	})
	t.Run("fails", func(t *testing.T) {
		t.Parallel()
		g := startGateway(t, writeConfig(t, map[string]any{"exits": roleServer(t, "exit")},
			map[string]any{"limits": map[string]any{"startTimeout": "30s", "maxRestarts": 0}}))
		srv := serveHTTP(t, g.Handler("search"))
		c := connectHTTP(t, srv.URL+"/mcp", nil)
		start := time.Now()
		text, isErr := c.call(t, searchToolName, map[string]any{"query": "exits__"})
		if isErr || !containsAll(text, "could not start", "API_TOKEN is not set") {
			t.Errorf("search naming a failing server = %q", text)
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("the search took %v: it waited for the timeout, not for the failure", d)
		}
	})
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestAutoSwitchesWhenCatalogGrows: a session that auto put in full mode
// switches to dynamic when a server comes up late with many tools: it is
// told (list_changed), gets search_tools and call_tool, keeps the tools it
// had, and finds the new ones through search. A session in full mode by
// choice stays full.
func TestAutoSwitchesWhenCatalogGrows(t *testing.T) {
	t.Parallel()
	many, open := gatedServer(t, "many")
	g := startGateway(t, writeConfig(t, map[string]any{"echo": roleServer(t, "echo"), "many": many},
		map[string]any{"contextWindow": 30000, "threshold": 10, "limits": map[string]any{"startTimeout": "60s"}}))
	waitState(t, g, "echo", 20*time.Second, StateReady)
	if mode, why := g.Exposure(); mode != "full" {
		t.Fatalf("auto picked %s before the late server (%s)", mode, why)
	}
	srv := serveHTTP(t, g.Handler(""))
	auto := connectHTTP(t, srv.URL+"/mcp/auto", nil)
	full := connectHTTP(t, srv.URL+"/mcp/full", nil)
	// Listed while the late server was starting: every tool known, and
	// the gateway's search and call, which reach the late server's
	// (fulllist.go).
	before := auto.toolNames(t)
	if !slices.Contains(before, searchToolName) || !slices.Contains(before, "echo__echo") {
		t.Fatalf("auto session before the late server lists %v", before)
	}

	open()
	waitState(t, g, "many", 30*time.Second, StateReady)
	if mode, _ := g.Exposure(); mode != "dynamic" {
		t.Fatalf("auto picks %s with the late server's tools", mode)
	}
	waitFor(t, "list_changed and search_tools in the auto session", 10*time.Second, func() bool {
		return auto.changed.Load() > 0 && slices.Contains(auto.toolNames(t), searchToolName)
	})
	after := auto.toolNames(t)
	for _, name := range before {
		if !slices.Contains(after, name) {
			t.Errorf("the switch dropped %s, which the client had", name)
		}
	}
	if !slices.Contains(after, callToolName) || slices.Contains(after, "many__gadget_7") {
		t.Errorf("after the switch the auto session lists %v", after)
	}
	if hits := auto.search(t, "many__gadget_7"); !slices.Contains(hits, "many__gadget_7") {
		t.Errorf("search for a new tool found %v", hits)
	}
	if text, isErr := auto.call(t, callToolName, map[string]any{"name": "many__gadget_7", "arguments": map[string]any{"size": 3}}); isErr || text != "adjusted gadget_7" {
		t.Errorf("call of a new tool = %q, %v", text, isErr)
	}
	if text, isErr := auto.call(t, "echo__echo", map[string]any{"text": "kept"}); isErr || text != "kept" {
		t.Errorf("call of a kept tool = %q, %v", text, isErr)
	}
	waitFor(t, "the late tools in the full session", 10*time.Second, func() bool {
		return slices.Contains(full.toolNames(t), "many__gadget_99")
	})
	if !slices.Contains(full.toolNames(t), "many__gadget_7") {
		t.Error("a session in full mode by choice switched: it does not list every tool")
	}
}
