package openai_test

import (
	"encoding/json"
	"testing"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolsearch/toolsearch/catalog"
	"github.com/toolsearch/toolsearch/deferral"
	"github.com/toolsearch/toolsearch/openai"
)

// TestSharedCatalogTargets measures the first request on the shared
// catalog with search on and off, for both APIs. Run with -v:
//
//	go test ./openai -run TestSharedCatalogTargets -v
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
