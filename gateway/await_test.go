package gateway

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestTargetedServers: which query forms name a server outright.
func TestTargetedServers(t *testing.T) {
	g := &Gateway{ups: map[string]*upstream{"github": nil, "slack": nil, "my-db": nil}}
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
	const delay = 3 * time.Second
	for _, query := range []string{"slow", "slow__", "mcp__slow", "slow__echo", "select:slow__echo,echo__echo"} {
		t.Run(query, func(t *testing.T) {
			t.Parallel()
			slow := roleServer(t, "slow-start")
			slow["env"].(map[string]string)["TOOLSEARCH_TEST_DELAY"] = delay.String()
			g := startGateway(t, writeConfig(t, map[string]any{"slow": slow, "echo": roleServer(t, "echo")},
				map[string]any{"limits": map[string]any{"startTimeout": "30s"}}))
			waitState(t, g, "echo", 20*time.Second, StateReady)
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()

			// Not targeted: answered without waiting, without slow's tools.
			res, err := g.Search(ctx, "echo the text back", 10)
			if err != nil {
				t.Fatal(err)
			}
			if st := waitState(t, g, "slow", 0, StateStarting, StateReady); st.State != StateStarting {
				t.Fatalf("slow is %s already: the test cannot tell waiting from not waiting (machine too slow?)", st.State)
			}
			for _, h := range res.Hits {
				if h.Tool.Server == "slow" {
					t.Fatalf("found %s before slow was up", h.Tool.ID())
				}
			}

			// Targeted: waits, then finds slow's tools.
			res, err = g.Search(ctx, query, 10)
			if err != nil {
				t.Fatal(err)
			}
			if st := waitState(t, g, "slow", 0, StateReady, StateStarting); st.State != StateReady {
				t.Fatalf("the search returned while slow is %s", st.State)
			}
			found := false
			for _, h := range res.Hits {
				found = found || h.Tool.Server == "slow"
			}
			if !found {
				t.Errorf("search %q after waiting found no tool of slow among %d hits", query, len(res.Hits))
			}
		})
	}
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
	many := roleServer(t, "many")
	many["env"].(map[string]string)["TOOLSEARCH_TEST_DELAY"] = "2s"
	g := startGateway(t, writeConfig(t, map[string]any{"echo": roleServer(t, "echo"), "many": many},
		map[string]any{"contextWindow": 30000, "threshold": 10}))
	waitState(t, g, "echo", 20*time.Second, StateReady)
	if mode, why := g.Exposure(); mode != "full" {
		t.Fatalf("auto picked %s before the late server (%s)", mode, why)
	}
	srv := serveHTTP(t, g.Handler(""))
	auto := connectHTTP(t, srv.URL+"/mcp/auto", nil)
	full := connectHTTP(t, srv.URL+"/mcp/full", nil)
	before := auto.toolNames(t)
	if st := waitState(t, g, "many", 0, StateStarting, StateReady); st.State != StateStarting {
		t.Fatalf("many is %s already: the test cannot see the switch (machine too slow?)", st.State)
	}
	if slices.Contains(before, searchToolName) || !slices.Contains(before, "echo__echo") {
		t.Fatalf("auto session before the late server lists %v", before)
	}

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
	if slices.Contains(full.toolNames(t), searchToolName) {
		t.Error("a session in full mode by choice switched")
	}
}
