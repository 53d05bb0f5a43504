package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolsearch/toolsearch/adapters/openai"
	"github.com/toolsearch/toolsearch/adapters/openai/openaitest"
	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/deferral"
	"github.com/toolsearch/toolsearch/core/search"
)

// TestSharedCatalogTargets measures the first request on the shared
// catalog with search on and off, for both APIs. Run with -v:
//
//	go test ./adapters/openai -run TestSharedCatalogTargets -v
func TestSharedCatalogTargets(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("the measurement on the shared catalog runs without -race and -short")
	}
	snap := sharedCatalog(t)
	task := "create a pull request on github"
	tokens := func(v any) int {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return catalog.CountTokens(string(b))
	}
	first := func(cfg openai.Config) (resp, chat int, rt *openai.Turn, ct *openai.ChatTurn) {
		ts := toolset(t, snap, cfg)
		conv := &openai.Conversation{Instructions: "You are a helpful agent."}
		conv.Input = append(conv.Input, openai.UserMessage(task))
		rt, err := ts.Turn(conv, responses.ResponseNewParams{Model: "gpt-test"})
		if err != nil {
			t.Fatal(err)
		}
		cc := &openai.ChatConversation{Messages: []oai.ChatCompletionMessageParamUnion{oai.SystemMessage("You are a helpful agent."), oai.UserMessage(task)}}
		ct, err = ts.ChatTurn(cc, oai.ChatCompletionNewParams{Model: "gpt-test"})
		if err != nil {
			t.Fatal(err)
		}
		return tokens(rt.Params), tokens(ct.Params), rt, ct
	}
	offR, offC, offRT, _ := first(openai.Config{Mode: deferral.Mode{Kind: deferral.Off}})
	onR, onC, onRT, onCT := first(openai.Config{})
	t.Logf("Responses, first request: search off %d o200k tokens (%d tools), tool_search %d tokens (%d tools): %.2f%% fewer",
		offR, offRT.ToolsSent, onR, onRT.ToolsSent, 100*(1-float64(onR)/float64(offR)))
	t.Logf("Chat Completions, first request: search off %d o200k tokens, emulated search %d tokens (%d tools): %.2f%% fewer",
		offC, onC, onCT.ToolsSent, 100*(1-float64(onC)/float64(offC)))
	if float64(onR)/float64(offR) >= 0.01 || float64(onC)/float64(offC) >= 0.01 {
		t.Error("search cuts the first request by less than 99%")
	}
}

// TestSharedCatalogStrategies runs the scripted session of the Anthropic
// measurement on the 113-server catalog per Responses strategy: 20
// requests, prompts in turn, sentry connecting and then connected (request
// 6), slack disconnected (request 11) and reconnected (request 16). It
// reports the first request's o200k tokens, the bytes of a request's
// prefix (instructions, tools, input) that the next one does not repeat,
// and the bytes sent over the session. Run with -v:
//
//	go test ./adapters/openai -run TestSharedCatalogStrategies -v
func TestSharedCatalogStrategies(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("the measurement on the shared catalog runs without -race and -short")
	}
	full := sharedCatalog(t)
	ctx := context.Background()
	noSentry, noSlack := without(t, full, "sentry"), without(t, full, "slack")
	index := map[*catalog.Snapshot]*search.Index{}
	for _, s := range []*catalog.Snapshot{full, noSentry, noSlack} {
		index[s] = search.Build(s)
	}
	stages := []struct {
		from       int
		snap       *catalog.Snapshot
		connecting []string
	}{{0, noSentry, []string{"sentry"}}, {5, full, nil}, {10, noSlack, nil}, {15, full, nil}}
	prompts := []string{
		"create a pull request on github",
		"post a message to a slack channel",
		"list the pods in the kubernetes cluster",
		"find the latest unresolved sentry issues",
		"create a pull request on github for the fix",
	}
	rows := []struct {
		name string
		cfg  openai.Config
		opts openaitest.Options
	}{
		{"tool_search (namespaces)", openai.Config{Strategy: openai.StrategyToolSearch}, openaitest.Options{}},
		{"tool_search, plain functions", openai.Config{Strategy: openai.StrategyToolSearch, NoNamespaces: true}, openaitest.Options{}},
		{"additional_tools (namespaces)", openai.Config{Strategy: openai.StrategyAdditionalTools}, openaitest.Options{}},
		{"additional_tools, plain functions", openai.Config{Strategy: openai.StrategyAdditionalTools, NoNamespaces: true}, openaitest.Options{}},
		{"functions", openai.Config{Strategy: openai.StrategyFunctions}, openaitest.Options{}},
		{"auto, endpoint without tool_search", openai.Config{}, openaitest.Options{RefuseToolSearch: true}},
	}
	off := toolset(t, full, openai.Config{Mode: deferral.Mode{Kind: deferral.Off}})
	offTurn, err := off.Turn(&openai.Conversation{Input: []responses.ResponseInputItemUnionParam{openai.UserMessage(prompts[0])}}, responses.ResponseNewParams{Model: "gpt-test"})
	if err != nil {
		t.Fatal(err)
	}
	offBody, _ := json.Marshal(offTurn.Params)
	lines := []string{fmt.Sprintf("search off: first request %d o200k tokens, %d tools", catalog.CountTokens(string(offBody)), offTurn.ToolsSent),
		"| strategy | first request (o200k tokens) | prefix bytes changed, by section | prefix bytes changed, in cache order | request bytes, 20 requests | tokens past the cached prefix, 20 requests | refusals | tools at the end |",
		"| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"}
	for _, row := range rows {
		srv := openaitest.New(t, row.opts)
		c := client(srv)
		row.cfg.Endpoints, row.cfg.Endpoint, row.cfg.Logger = &openai.Endpoints{}, srv.URL, slog.New(slog.DiscardHandler)
		conv := &openai.Conversation{Instructions: "You are a helpful agent."}
		var ts *openai.Toolset
		cur, next, done := -1, 0, true
		var last *openai.Turn
		for i := range 20 {
			for s := len(stages) - 1; s >= 0; s-- {
				if i >= stages[s].from {
					if s != cur {
						ts, err = openai.NewToolset(openai.Source{Snapshot: stages[s].snap, Index: index[stages[s].snap], Connecting: stages[s].connecting}, row.cfg)
						if err != nil {
							t.Fatal(err)
						}
						cur = s
					}
					break
				}
			}
			if done {
				conv.Input = append(conv.Input, openai.UserMessage(prompts[next%len(prompts)]))
				next++
			}
			turn, resp, err := ts.Send(ctx, &c.Responses, conv, responses.ResponseNewParams{Model: "gpt-test"})
			if err != nil {
				t.Fatalf("%s, request %d: %v", row.name, i+1, err)
			}
			last = turn
			conv.Input = append(conv.Input, openai.OutputItems(resp)...)
			done = answer(ctx, t, ts, conv, resp)
		}
		// The accepted requests, in order.
		bodies := srv.Requests()
		checkBodies(t, bodies)
		firstOK := len(srv.Rejections()) // the refused requests come first
		changed, cacheChanged, total, uncached := 0, 0, 0, 0
		for i, b := range bodies {
			total += len(b)
			switch {
			case i > firstOK:
				changed += changedPrefix(t, bodies[i-1], b)
				cacheChanged += changedCacheOrder(t, bodies[i-1], b)
				uncached += catalog.CountTokens(string(cacheTail(t, bodies[i-1], b)))
			case i == firstOK:
				uncached += catalog.CountTokens(string(cacheTail(t, nil, b)))
			}
		}
		lines = append(lines, fmt.Sprintf("| %s | %d | %d | %d | %d | %d | %d | %d |", row.name, catalog.CountTokens(string(bodies[firstOK])), changed, cacheChanged, total, uncached, len(srv.Rejections()), last.ToolsSent))
		if row.cfg.Strategy != openai.StrategyFunctions && changed != 0 {
			t.Errorf("%s: %d prefix bytes changed, want 0", row.name, changed)
		}
	}
	t.Log("\n" + strings.Join(lines, "\n"))
}

// changedCacheOrder counts the bytes of prev's instructions, tools and
// input, laid end to end in the order a prompt cache reads them, that next
// does not repeat: a tool appended to the tools array changes every input
// item after it.
func changedCacheOrder(t testing.TB, prev, next []byte) int {
	t.Helper()
	p, n := cacheSeq(t, prev), cacheSeq(t, next)
	same := 0
	for same < len(p) && same < len(n) && p[same] == n[same] {
		same++
	}
	return len(p) - same
}

// cacheTail is what of next's instructions, tools and input, in cache
// order, comes after the bytes it shares with prev (all of it when prev is
// nil): what a prompt cache keyed on prev cannot serve.
func cacheTail(t testing.TB, prev, next []byte) []byte {
	t.Helper()
	n := cacheSeq(t, next)
	if prev == nil {
		return n
	}
	p := cacheSeq(t, prev)
	same := 0
	for same < len(p) && same < len(n) && p[same] == n[same] {
		same++
	}
	return n[same:]
}

// cacheSeq lays a request's instructions, tools and input end to end, in
// the order a prompt cache reads them.
func cacheSeq(t testing.TB, body []byte) []byte {
	t.Helper()
	seq := func(body []byte) []byte {
		var b struct {
			Instructions json.RawMessage   `json:"instructions"`
			Tools        []json.RawMessage `json:"tools"`
			Input        []json.RawMessage `json:"input"`
		}
		if err := json.Unmarshal(body, &b); err != nil {
			t.Fatal(err)
		}
		out := append([]byte(nil), b.Instructions...)
		for _, x := range b.Tools {
			out = append(out, x...)
		}
		out = append(out, 0) // the end of the tools array
		for _, x := range b.Input {
			out = append(out, x...)
		}
		return out
	}
	return seq(body)
}
