package anthropic_test

import (
	"context"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/toolsearch/toolsearch/adapters/anthropic"
)

// BenchmarkTurn measures assembling a request on the shared catalog, for a
// conversation that has loaded tools twice.
func BenchmarkTurn(b *testing.B) {
	snap := sharedCatalog(b)
	ts, err := anthropic.NewToolset(anthropic.Source{Snapshot: snap, Index: indexOf(snap)}, anthropic.Config{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	conv := &anthropic.Conversation{}
	for i, q := range []string{"create a pull request on github", "post a message to a slack channel"} {
		conv.Messages = append(conv.Messages, sdk.NewUserMessage(sdk.NewTextBlock(q)))
		if _, err := ts.Turn(conv, sdk.MessageNewParams{Model: "m", MaxTokens: 1}); err != nil {
			b.Fatal(err)
		}
		id := "toolu_" + string(rune('a'+i))
		conv.Messages = append(conv.Messages, sdk.NewAssistantMessage(sdk.NewToolUseBlock(id, map[string]any{"query": q}, "tool_search")))
		ans, err := ts.AnswerSearch(ctx, id, []byte(`{"query":"`+q+`"}`))
		if err != nil {
			b.Fatal(err)
		}
		conv.Messages = append(conv.Messages, anthropic.ResultsMessage(nil, ans))
	}
	b.ResetTimer()
	for b.Loop() {
		c := *conv
		if _, err := ts.Turn(&c, sdk.MessageNewParams{Model: "m", MaxTokens: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNewToolset measures binding a 3,601-tool snapshot (the index is
// built once, outside the loop).
func BenchmarkNewToolset(b *testing.B) {
	snap := sharedCatalog(b)
	ix := indexOf(snap)
	for b.Loop() {
		if _, err := anthropic.NewToolset(anthropic.Source{Snapshot: snap, Index: ix}, anthropic.Config{}); err != nil {
			b.Fatal(err)
		}
	}
}
