package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/toolsearch/toolsearch/adapters/anthropic"
	"github.com/toolsearch/toolsearch/adapters/anthropic/anthropictest"
	"github.com/toolsearch/toolsearch/core/catalog/demo"
	"github.com/toolsearch/toolsearch/core/deferral"
)

var tasks = []string{
	"Create an issue on the code host about the login bug",
	"post a message to the team chat channel",
	"Create an issue on the code host about the logout bug",
}

// TestAgentAgainstStandIn runs the example's loop against the local
// stand-in, which refuses every request the API would refuse (every tool
// deferred, a reference to an absent tool, cache_control on a deferred
// tool, unpaired tool_use, ...).
func TestAgentAgainstStandIn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		search    anthropic.SearchKind
		strategy  anthropic.Strategy
		standin   anthropictest.Options
		mode      deferral.Mode
		wantSteps int
		// wantStrategy is the strategy of the last request, and
		// wantRefusals the refusals on the way there.
		wantStrategy string
		wantRefusals int
	}{
		{name: "client search, auto", search: anthropic.ClientSearch, wantSteps: 8, wantStrategy: "inline"},
		{name: "client search, reference-add", strategy: anthropic.ReferenceAdd, wantSteps: 8, wantStrategy: "reference-add"},
		{name: "client search, classic", strategy: anthropic.Classic, wantSteps: 8, wantStrategy: "classic"},
		{name: "client search, an endpoint without inline tools", standin: anthropictest.Options{NoInlineTools: true},
			wantSteps: 8, wantStrategy: "reference-add", wantRefusals: 1},
		{name: "client search, a relay without tool search", standin: anthropictest.Options{NoReferences: true, NoSystemMessages: true},
			wantSteps: 8, wantStrategy: "plain", wantRefusals: 2},
		{name: "server bm25", search: anthropic.ServerBM25, wantSteps: 6, wantStrategy: "classic"},
		{name: "server regex", search: anthropic.ServerRegex, wantSteps: 6, wantStrategy: "classic"},
		{name: "search off", mode: deferral.Mode{Kind: deferral.Off}, wantSteps: 6, wantStrategy: "classic"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := anthropictest.New(t, tt.standin)
			c := sdk.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
			var out bytes.Buffer
			rep, err := run(context.Background(), c, config{Snapshot: demo.Snapshot(), Model: "claude-test", Tasks: tasks,
				Search: tt.search, Strategy: tt.strategy, Mode: tt.mode, MaxSteps: 6}, &out)
			if err != nil {
				t.Fatalf("%v\n%s\nrefused: %q", err, out.String(), srv.Rejections())
			}
			if rej := srv.Rejections(); len(rej) != tt.wantRefusals {
				t.Fatalf("refused %q, want %d refusals", rej, tt.wantRefusals)
			}
			if last := rep.Steps[len(rep.Steps)-1].Strategy; last != tt.wantStrategy {
				t.Errorf("last request's strategy %s, want %s\n%s", last, tt.wantStrategy, out.String())
			}
			if !strings.Contains(out.String(), "strategy: ") {
				t.Errorf("the strategy is not shown:\n%s", out.String())
			}
			for i, want := range []string{"codehost/create_issue", "teamchat/postMessage", "codehost/create_issue"} {
				if !strings.Contains(rep.Final[i], want) {
					t.Errorf("task %d ended with %q, want %s\n%s", i, rep.Final[i], want, out.String())
				}
			}
			if len(rep.Steps) != tt.wantSteps {
				t.Errorf("%d requests, want %d\n%s", len(rep.Steps), tt.wantSteps, out.String())
			}
			t.Logf("\n%s", out.String())
		})
	}
}

// TestAgentAgainstRealAPI runs the loop against the real API when
// ANTHROPIC_API_KEY and TOOLSEARCH_LIVE=1 are set.
func TestAgentAgainstRealAPI(t *testing.T) {
	if os.Getenv("ANTHROPIC_API_KEY") == "" || os.Getenv("TOOLSEARCH_LIVE") != "1" {
		t.Skip("set ANTHROPIC_API_KEY and TOOLSEARCH_LIVE=1 to run against the real API")
	}
	c := sdk.NewClient()
	var out bytes.Buffer
	_, err := run(context.Background(), c, config{Snapshot: demo.Snapshot(), Model: "claude-sonnet-4-5", Tasks: tasks[:1], MaxSteps: 8}, &out)
	t.Logf("\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
}
