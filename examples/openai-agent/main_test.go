package main

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/toolsearch/toolsearch/adapters/openai"
	"github.com/toolsearch/toolsearch/adapters/openai/openaitest"
	"github.com/toolsearch/toolsearch/core/catalog/demo"
	"github.com/toolsearch/toolsearch/core/deferral"
)

var tasks = []string{
	"Create an issue on the code host about the login bug",
	"post a message to the team chat channel",
	"Create an issue on the code host about the logout bug",
}

// TestAgentAgainstStandIn runs the example's loops against the local
// stand-in, which refuses what the APIs refuse (a tool_search_call or
// function_call without its output, a call to a function neither in tools
// nor loaded, deferred functions without tool_search, unanswered chat tool
// calls, ...).
func TestAgentAgainstStandIn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		chat      bool
		mode      deferral.Mode
		cfg       config // Strategy and NoToolSearch
		standIn   openaitest.Options
		wantCalls []string
		wantTools []int
		// wantStrategies are the strategies used, in order; refusals the
		// stand-in's 400s (each costs one retry).
		wantStrategies []string
		refusals       int
	}{
		{
			name: "responses",
			wantCalls: []string{"tool_search", "codehost__issue.create_issue", "tool_search", "teamchat.postMessage",
				"codehost__issue.create_issue"},
			wantTools:      []int{2, 2, 2, 2, 2, 2, 2, 2},
			wantStrategies: []string{"tool_search"},
		},
		{
			name: "responses, model without tool_search",
			cfg:  config{NoToolSearch: true},
			wantCalls: []string{"tool_search", "codehost__issue.create_issue", "tool_search", "teamchat.postMessage",
				"codehost__issue.create_issue"},
			wantTools:      []int{2, 2, 2, 2, 2, 2, 2, 2},
			wantStrategies: []string{"additional_tools"},
		},
		{
			name:    "responses, endpoint without tool_search or namespaces",
			standIn: openaitest.Options{RefuseToolSearch: true, RefuseNamespaces: true},
			wantCalls: []string{"tool_search", ".codehost__create_issue", "tool_search", ".teamchat__postMessage",
				".codehost__create_issue"},
			wantTools:      []int{2, 2, 2, 2, 2, 2, 2, 2},
			wantStrategies: []string{"additional_tools", "additional_tools"}, // then without namespaces
			refusals:       2,
		},
		{
			name: "responses, functions",
			cfg:  config{Strategy: openai.StrategyFunctions},
			wantCalls: []string{"tool_search", ".codehost__create_issue", "tool_search", ".teamchat__postMessage",
				".codehost__create_issue"},
			wantTools:      []int{2, 7, 7, 7, 12, 12, 12, 12},
			wantStrategies: []string{"functions"},
		},
		{
			name:      "responses, search off",
			mode:      deferral.Mode{Kind: deferral.Off},
			wantCalls: []string{".codehost__create_issue", ".teamchat__postMessage", ".codehost__create_issue"},
			wantTools: []int{89, 89, 89, 89, 89, 89},
		},
		{
			name:      "chat",
			chat:      true,
			wantCalls: []string{"tool_search", "codehost__create_issue", "tool_search", "teamchat__postMessage", "codehost__create_issue"},
			// Each search returns its five best matches (max_results), all
			// sent in full from then on.
			wantTools: []int{2, 7, 7, 7, 12, 12, 12, 12},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := openaitest.New(t, tt.standIn)
			c := oai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("test"), option.WithMaxRetries(0))
			cfg := config{Snapshot: demo.Snapshot(), Model: "gpt-test", Tasks: tasks, Chat: tt.chat, Mode: tt.mode, MaxSteps: 6,
				Strategy: tt.cfg.Strategy, NoToolSearch: tt.cfg.NoToolSearch, Endpoint: srv.URL}
			var out bytes.Buffer
			run := runResponses
			if tt.chat {
				run = runChat
			}
			rep, err := run(context.Background(), c, cfg, &out)
			if err != nil {
				t.Fatalf("%v\n%s\nrefused: %q", err, out.String(), srv.Rejections())
			}
			if rej := srv.Rejections(); len(rej) != tt.refusals {
				t.Fatalf("refused %d times, want %d: %q", len(rej), tt.refusals, rej)
			}
			var strategies []string
			for _, s := range rep.Strategies {
				strategies = append(strategies, strings.SplitN(s, ":", 2)[0])
			}
			if !tt.chat && tt.mode.Kind != deferral.Off && !slices.Equal(strategies, tt.wantStrategies) {
				t.Errorf("strategies %q, want %q", rep.Strategies, tt.wantStrategies)
			}
			var calls []string
			for _, c := range rep.Calls {
				calls = append(calls, strings.SplitN(c, " ", 2)[0])
			}
			if strings.Join(calls, " ") != strings.Join(tt.wantCalls, " ") {
				t.Errorf("calls %q, want %q\n%s", calls, tt.wantCalls, out.String())
			}
			for i, want := range []string{"codehost/create_issue", "teamchat/postMessage", "codehost/create_issue"} {
				if !strings.Contains(rep.Final[i], want) {
					t.Errorf("task %d ended with %q", i, rep.Final[i])
				}
			}
			if !slices.Equal(rep.Tools, tt.wantTools) {
				t.Errorf("tools per request %v, want %v", rep.Tools, tt.wantTools)
			}
			t.Logf("\n%s", out.String())
		})
	}
}

// TestAgentAgainstRealAPI runs the loop against the real API when
// OPENAI_API_KEY and TOOLSEARCH_LIVE=1 are set.
func TestAgentAgainstRealAPI(t *testing.T) {
	if os.Getenv("OPENAI_API_KEY") == "" || os.Getenv("TOOLSEARCH_LIVE") != "1" {
		t.Skip("set OPENAI_API_KEY and TOOLSEARCH_LIVE=1 to run against the real API")
	}
	var out bytes.Buffer
	_, err := runResponses(context.Background(), oai.NewClient(), config{Snapshot: demo.Snapshot(), Model: "gpt-5.4", Tasks: tasks[:1], MaxSteps: 8}, &out)
	t.Logf("\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
}
