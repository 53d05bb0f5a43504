package anthropic_test

import (
	"context"
	"encoding/json"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/toolsearch/toolsearch/adapters/anthropic"
	"github.com/toolsearch/toolsearch/adapters/anthropic/anthropictest"
	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/catalog/demo"
	"github.com/toolsearch/toolsearch/core/search"
)

// client returns an SDK client pointed at a stand-in.
func client(srv *anthropictest.Server) sdk.Client {
	return sdk.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test-key"), option.WithMaxRetries(0))
}

// toolset builds a Toolset over snap.
func toolset(t testing.TB, snap *catalog.Snapshot, cfg anthropic.Config, connecting ...string) *anthropic.Toolset {
	t.Helper()
	ts, err := anthropic.NewToolset(anthropic.Source{Snapshot: snap, Index: search.Build(snap), Connecting: connecting}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// step sends one turn and answers the response's tool calls. It returns the
// turn, the response, and whether the model ended its turn.
func step(ctx context.Context, t testing.TB, ts *anthropic.Toolset, c sdk.Client, conv *anthropic.Conversation) (*anthropic.Turn, *sdk.Message, bool) {
	t.Helper()
	msg, turn, err := ts.Send(ctx, &c.Messages, conv, sdk.MessageNewParams{Model: "claude-test", MaxTokens: 1024})
	if err != nil {
		t.Fatalf("request refused: %v", err)
	}
	conv.Messages = append(conv.Messages, msg.ToParam())
	var results []sdk.ContentBlockParamUnion
	var answers []anthropic.SearchAnswer
	for _, b := range msg.Content {
		if b.Type != "tool_use" {
			continue
		}
		if ts.IsClientSearch(b.Name) {
			a, err := ts.AnswerSearch(ctx, b.ID, b.Input)
			if err != nil {
				t.Fatal(err)
			}
			answers = append(answers, a)
			continue
		}
		if ts.Gone(b.Name) {
			results = append(results, ts.GoneResult(b.ID, b.Name))
			continue
		}
		text := "no such tool: " + b.Name
		if tool, ok := ts.Resolve(b.Name); ok {
			text = "ok: ran " + tool.ID()
		}
		results = append(results, sdk.NewToolResultBlock(b.ID, text, false))
	}
	if len(results)+len(answers) == 0 {
		return turn, msg, true
	}
	conv.Messages = append(conv.Messages, anthropic.ResultsMessage(results, answers...))
	return turn, msg, false
}

// run drives a conversation on one task until the model ends its turn.
func run(ctx context.Context, t testing.TB, ts *anthropic.Toolset, c sdk.Client, conv *anthropic.Conversation, task string) []*anthropic.Turn {
	t.Helper()
	conv.Messages = append(conv.Messages, sdk.NewUserMessage(sdk.NewTextBlock(task)))
	var turns []*anthropic.Turn
	for range 8 {
		turn, _, done := step(ctx, t, ts, c, conv)
		turns = append(turns, turn)
		if done {
			return turns
		}
	}
	t.Fatalf("task %q did not end", task)
	return nil
}

// lastText returns the last text block of the conversation's last
// assistant message.
func lastText(conv *anthropic.Conversation) string {
	for i := len(conv.Messages) - 1; i >= 0; i-- {
		a := conv.Messages[i].OfAssistant
		if a == nil {
			continue
		}
		for j := len(a.Content) - 1; j >= 0; j-- {
			if tb := a.Content[j].OfText; tb != nil {
				return tb.Text
			}
		}
	}
	return ""
}

// toolsOf returns the names and defer flags of a request's tools.
func toolsOf(t testing.TB, p sdk.MessageNewParams) (names []string, deferred map[string]bool) {
	t.Helper()
	b, err := json.Marshal(p.Tools)
	if err != nil {
		t.Fatal(err)
	}
	var tools []struct {
		Name         string          `json:"name"`
		DeferLoading bool            `json:"defer_loading"`
		CacheControl json.RawMessage `json:"cache_control"`
	}
	if err := json.Unmarshal(b, &tools); err != nil {
		t.Fatal(err)
	}
	deferred = map[string]bool{}
	for _, tl := range tools {
		names = append(names, tl.Name)
		deferred[tl.Name] = tl.DeferLoading
	}
	return names, deferred
}

func demoSnap() *catalog.Snapshot { return demo.Snapshot() }

// without returns snap without the named servers.
func without(t testing.TB, snap *catalog.Snapshot, keys ...string) *catalog.Snapshot {
	t.Helper()
	var ch []catalog.Change
	for _, k := range keys {
		ch = append(ch, catalog.Remove(k))
	}
	out, _, err := snap.Apply(ch...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type catalogTool = catalog.Tool
