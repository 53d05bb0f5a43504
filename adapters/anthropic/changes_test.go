package anthropic_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/toolsearch/toolsearch/adapters/anthropic"
	"github.com/toolsearch/toolsearch/adapters/anthropic/anthropictest"
)

// Messages of a hand-written history, one per wire form a tool can be
// added or withdrawn in.
const (
	hUser       = `{"role":"user","content":"create an issue"}`
	hSearchCall = `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_s","name":"tool_search","input":{"query":"issue"}}]}`
	hRefAnswer  = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_s","content":[{"type":"tool_reference","tool_name":"codehost__create_issue"}]},{"type":"text","text":"Tool loaded."}]}`
	hTextAnswer = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_s","content":[{"type":"text","text":"Loaded tools: teamchat__postMessage"}]}]}`
	hAddRef     = `{"role":"system","content":[{"type":"tool_addition","tool":{"type":"tool_reference","name":"teamchat__postMessage"}}]}`
	hAddDef     = `{"role":"system","content":[{"type":"tool_addition","tool":{"type":"tool_definition","definition":{"name":"kube__scaleDeployment","input_schema":{"type":"object"}}}}]}`
	hRemove     = `{"role":"system","content":[{"type":"tool_removal","tool":{"type":"tool_reference","name":"teamchat__postMessage"}}]}`
	hCompaction = `{"role":"assistant","content":[{"type":"compaction","content":"summary","tool_changes":[` +
		`{"type":"tool_addition","tool":{"type":"tool_definition","definition":{"name":"calendar__createEvent","input_schema":{"type":"object"}}}},` +
		`{"type":"tool_removal","tool":{"type":"tool_reference","name":"kube__scaleDeployment"}}]}]}`
	// A tool_addition in a user message is not a tool change.
	hUserAddition = `{"role":"user","content":[{"type":"tool_addition","tool":{"type":"tool_reference","name":"files__read_file"}}]}`
)

func TestReadHistoryToolChanges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		msgs        []string
		active      []string
		added       []string
		referenced  []string
		definitions []string
	}{
		{name: "classic", msgs: []string{hUser, hSearchCall, hRefAnswer},
			active: []string{"codehost__create_issue"}, referenced: []string{"codehost__create_issue"}},
		{name: "reference-add", msgs: []string{hUser, hSearchCall, hTextAnswer, hAddRef},
			active: []string{"teamchat__postMessage"}, added: []string{"teamchat__postMessage"}},
		{name: "inline", msgs: []string{hUser, hAddDef},
			active: []string{"kube__scaleDeployment"}, added: []string{"kube__scaleDeployment"}, definitions: []string{"kube__scaleDeployment"}},
		{name: "a removal withdraws", msgs: []string{hUser, hSearchCall, hTextAnswer, hAddRef, hRemove}},
		{name: "mixed, then a compaction's tool_changes", msgs: []string{hUser, hSearchCall, hRefAnswer, hAddRef, hAddDef, hCompaction},
			active:      []string{"codehost__create_issue", "teamchat__postMessage", "calendar__createEvent"},
			added:       []string{"teamchat__postMessage", "calendar__createEvent"},
			referenced:  []string{"codehost__create_issue"},
			definitions: []string{"calendar__createEvent", "kube__scaleDeployment"}},
		{name: "additions outside system messages do not count", msgs: []string{hUser, hUserAddition}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var raws []json.RawMessage
			for _, m := range tt.msgs {
				raws = append(raws, json.RawMessage(m))
			}
			h := anthropic.ReadHistory(raws, "tool_search")
			if got := h.Active().Names(); !slices.Equal(got, tt.active) {
				t.Errorf("Active = %q, want %q", got, tt.active)
			}
			if got := h.Added().Names(); !slices.Equal(got, tt.added) {
				t.Errorf("Added = %q, want %q", got, tt.added)
			}
			if got := h.Referenced.Names(); !slices.Equal(got, tt.referenced) {
				t.Errorf("Referenced = %q, want %q", got, tt.referenced)
			}
			var defs []string
			for n := range h.Definitions {
				defs = append(defs, n)
			}
			slices.Sort(defs)
			if !slices.Equal(defs, tt.definitions) {
				t.Errorf("Definitions = %q, want %q", defs, tt.definitions)
			}
		})
	}
}

// TestToolChangesRoundTripSDK checks that the system message Turn writes is
// what the SDK's beta types encode, and that the stand-in takes a request
// built with those types through the SDK's beta client.
func TestToolChangesRoundTripSDK(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := anthropictest.New(t, anthropictest.Options{})
	ts := toolset(t, demoSnap(), anthropic.Config{Strategy: anthropic.Inline})
	conv := &anthropic.Conversation{}
	turns := run(ctx, t, ts, client(srv), conv, "Create an issue on the code host about the login bug")
	if len(turns) < 2 || len(turns[1].Added) == 0 {
		t.Fatalf("no tool added: %+v", turns)
	}
	var sys json.RawMessage
	for _, m := range marshalAll(t, conv.Messages) {
		if strings.HasPrefix(string(m), `{"role":"system"`) || strings.Contains(string(m), `"role":"system"`) {
			sys = m
		}
	}
	var beta sdk.BetaMessageParam
	if err := json.Unmarshal(sys, &beta); err != nil || beta.OfSystem == nil {
		t.Fatalf("the SDK does not read %s: %v", sys, err)
	}
	again, err := json.Marshal(beta)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	_ = json.Unmarshal(sys, &a)
	_ = json.Unmarshal(again, &b)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("the SDK re-encodes the message differently:\n%s\n%s", sys, again)
	}

	// The same conversation through the SDK's beta client.
	var msgs []sdk.BetaMessageParam
	for _, m := range marshalAll(t, conv.Messages) {
		var bm sdk.BetaMessageParam
		if err := json.Unmarshal(m, &bm); err != nil {
			t.Fatalf("the SDK does not read %s: %v", m, err)
		}
		msgs = append(msgs, bm)
	}
	msgs = append(msgs, sdk.BetaMessageParam{OfUser: &sdk.BetaUserMessageParam{Content: []sdk.BetaContentBlockParamUnion{{OfText: &sdk.BetaTextBlockParam{Text: "thanks"}}}}},
		sdk.BetaMessageParam{OfSystem: &sdk.BetaSystemMessageParam{Content: []sdk.BetaSystemMessageParamContentUnion{{OfToolRemoval: &sdk.BetaRequestToolRemovalBlockParam{
			Tool: sdk.BetaRequestToolRemovalBlockToolUnionParam{OfToolReference: &sdk.BetaToolChangeToolReferenceParam{Name: turns[1].Added[0]}}}}}}})
	var tools []sdk.BetaToolUnionParam
	for _, tl := range conv.Tools {
		tools = append(tools, param.Override[sdk.BetaToolUnionParam](json.RawMessage(mustJSON(t, tl))))
	}
	c := client(srv)
	_, err = c.Beta.Messages.New(ctx, sdk.BetaMessageNewParams{Model: "claude-test", MaxTokens: 100, Tools: tools, Messages: msgs,
		Betas: []sdk.AnthropicBeta{sdk.AnthropicBetaMidConversationToolChanges2026_07_01, sdk.AnthropicBetaInlineTools2026_09_15}}, option.WithMaxRetries(0))
	if err != nil {
		t.Fatalf("the stand-in refused the SDK's beta request: %v", err)
	}
}

// TestNeverDropReferenced: a tool a reference in the history names stays
// in tools after its server left the catalog (its last definition), the
// request is accepted, and a call of it gets a clear error; under Inline and
// ReferenceAdd the tool is withdrawn with a tool_removal.
func TestNeverDropReferenced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	gone := without(t, demoSnap(), "codehost")
	tests := []struct {
		strategy anthropic.Strategy
		removal  bool
	}{
		{strategy: anthropic.Classic},
		{strategy: anthropic.ReferenceAdd, removal: true},
		{strategy: anthropic.Inline, removal: true},
	}
	for _, tt := range tests {
		t.Run(tt.strategy.String(), func(t *testing.T) {
			t.Parallel()
			srv := anthropictest.New(t, anthropictest.Options{})
			cfg := anthropic.Config{Strategy: tt.strategy}
			conv := &anthropic.Conversation{}
			run(ctx, t, toolset(t, demoSnap(), cfg), client(srv), conv, "Create an issue on the code host about the login bug")

			after := toolset(t, gone, cfg)
			conv.Messages = append(conv.Messages, sdk.NewUserMessage(sdk.NewTextBlock("post a message to the team chat channel")))
			turn, _, _ := step(ctx, t, after, client(srv), conv)
			if rej := srv.Rejections(); len(rej) > 0 {
				t.Fatalf("refused after the server left: %q", rej)
			}
			if turn.Rewritten != 0 {
				t.Fatalf("%d references rewritten; the definitions were at hand", turn.Rewritten)
			}
			if got := slices.Contains(turn.Removed, "codehost__create_issue"); got != tt.removal {
				t.Fatalf("removed %q, want codehost__create_issue removed: %v", turn.Removed, tt.removal)
			}
			if tt.strategy == anthropic.Classic && !slices.Contains(turn.Kept, "codehost__create_issue") {
				t.Fatalf("kept %q", turn.Kept)
			}
			// A later request is accepted too, and the model, asked for the
			// gone tool by name, gets the error that names the server.
			if !after.Gone("codehost__create_issue") || after.Gone("tool_search") || after.Gone("teamchat__postMessage") {
				t.Fatal("Gone is wrong")
			}
			res := after.GoneResult("toolu_x", "codehost__create_issue")
			if b := mustJSON(t, res); !strings.Contains(b, `server \"codehost\" is gone`) || !strings.Contains(b, `"is_error":true`) {
				t.Fatalf("GoneResult: %s", b)
			}
			run(ctx, t, after, client(srv), conv, "scale the web deployment on kubernetes")
			if rej := srv.Rejections(); len(rej) > 0 {
				t.Fatalf("refused later: %q", rej)
			}
		})
	}
}

// TestCompactionKeepsAdditions: what was added stays added across a
// compaction, client-side (Compact) and server-side (a compaction block's
// tool_changes).
func TestCompactionKeepsAdditions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, strat := range []anthropic.Strategy{anthropic.Inline, anthropic.ReferenceAdd} {
		t.Run(strat.String()+", Compact", func(t *testing.T) {
			t.Parallel()
			srv := anthropictest.New(t, anthropictest.Options{})
			ts := toolset(t, demoSnap(), anthropic.Config{Strategy: strat})
			conv := &anthropic.Conversation{}
			run(ctx, t, ts, client(srv), conv, "Create an issue on the code host about the login bug")
			before := anthropic.ReadHistory(marshalAll(t, conv.Messages), "tool_search").Active().Names()
			if _, err := ts.Compact(conv, len(conv.Messages)-1, "Summary: an issue was created."); err != nil {
				t.Fatal(err)
			}
			turns := run(ctx, t, ts, client(srv), conv, "Create an issue on the code host about the logout bug")
			if rej := srv.Rejections(); len(rej) > 0 {
				t.Fatalf("refused: %q", rej)
			}
			if !slices.Equal(turns[0].Added, before) {
				t.Fatalf("after compaction the first turn added %q, want %q", turns[0].Added, before)
			}
			if len(turns) != 2 {
				t.Fatalf("%d requests after compaction, want 2 (the call without a search, done)", len(turns))
			}
		})
	}
	t.Run("compaction block", func(t *testing.T) {
		t.Parallel()
		srv := anthropictest.New(t, anthropictest.Options{})
		ts := toolset(t, demoSnap(), anthropic.Config{Strategy: anthropic.Inline})
		def := `{"name":"codehost__create_issue","description":"Open a new issue","input_schema":{"type":"object"}}`
		comp := `{"role":"assistant","content":[{"type":"compaction","content":"Summary.","tool_changes":[{"type":"tool_addition","tool":{"type":"tool_definition","definition":` + def + `}}]}]}`
		conv := &anthropic.Conversation{Messages: []sdk.MessageParam{
			sdk.NewUserMessage(sdk.NewTextBlock("hello")),
			param.Override[sdk.MessageParam](json.RawMessage(comp)),
		}}
		turns := run(ctx, t, ts, client(srv), conv, "Create an issue on the code host about the logout bug")
		if rej := srv.Rejections(); len(rej) > 0 {
			t.Fatalf("refused: %q", rej)
		}
		if len(turns[0].Added) != 0 || !slices.Contains(turns[0].Loaded, "codehost__create_issue") {
			t.Fatalf("added %q, loaded %q", turns[0].Added, turns[0].Loaded)
		}
		if got := lastText(conv); !strings.Contains(got, "Done: ok: ran codehost/create_issue") {
			t.Fatalf("the model ended with %q", got)
		}
	})
}

// TestHiddenToolNeverOffered is an attack test: a compaction block (which
// comes from the endpoint) adds a tool the policy hides. The request leaves
// that change out, the tool is neither sent nor routed, and a call of it is
// not taken for a tool whose server left.
func TestHiddenToolNeverOffered(t *testing.T) {
	t.Parallel()
	hide := func(tl *catalogTool) bool { return tl.Server != "codehost" }
	def := `{"name":"codehost__create_issue","description":"Open a new issue","input_schema":{"type":"object"}}`
	comp := `{"role":"assistant","content":[{"type":"compaction","content":"Summary.","tool_changes":[` +
		`{"type":"tool_addition","tool":{"type":"tool_definition","definition":` + def + `}},` +
		`{"type":"tool_addition","tool":{"type":"tool_reference","name":"codehost__list_issues"}}]}]}`
	for _, strat := range []anthropic.Strategy{anthropic.Inline, anthropic.ReferenceAdd, anthropic.Classic} {
		t.Run(strat.String(), func(t *testing.T) {
			t.Parallel()
			srv := anthropictest.New(t, anthropictest.Options{})
			ts := toolset(t, demoSnap(), anthropic.Config{Strategy: strat, Visible: hide})
			conv := &anthropic.Conversation{Messages: []sdk.MessageParam{
				sdk.NewUserMessage(sdk.NewTextBlock("hello")),
				param.Override[sdk.MessageParam](json.RawMessage(comp)),
				sdk.NewUserMessage(sdk.NewTextBlock("Create an issue on the code host about the logout bug")),
			}}
			turn, _, _ := step(context.Background(), t, ts, client(srv), conv)
			if rej := srv.Rejections(); len(rej) > 0 {
				t.Fatalf("refused: %q", rej)
			}
			body := mustJSON(t, turn.Params)
			if strings.Contains(body, "codehost__") {
				t.Fatalf("a hidden tool reached the request: %s", body)
			}
			if _, ok := ts.Resolve("codehost__create_issue"); ok || ts.Gone("codehost__create_issue") {
				t.Fatal("a hidden tool resolves, or passes for a gone one")
			}
			if got := lastText(conv); strings.Contains(got, "codehost") {
				t.Fatalf("the model used a hidden tool: %q", got)
			}
		})
	}
}

// TestNoToolChangesAfterAssistant: after an assistant message (a prefill,
// or a paused turn) the tool changes wait for the next user message.
func TestNoToolChangesAfterAssistant(t *testing.T) {
	t.Parallel()
	for _, strat := range []anthropic.Strategy{anthropic.Inline, anthropic.ReferenceAdd} {
		ts := toolset(t, demoSnap(), anthropic.Config{Strategy: strat})
		msgs := []sdk.MessageParam{
			sdk.NewUserMessage(sdk.NewTextBlock("create an issue")),
			param.Override[sdk.MessageParam](json.RawMessage(hSearchCall)),
			param.Override[sdk.MessageParam](json.RawMessage(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_s","content":[{"type":"text","text":"Loaded tools: codehost__create_issue"}]}]}`)),
		}
		paused := append(append([]sdk.MessageParam(nil), msgs...), sdk.NewAssistantMessage(sdk.NewTextBlock("Let me")))
		for _, tt := range []struct {
			msgs []sdk.MessageParam
			want int
		}{{msgs, 1}, {paused, 0}} {
			conv := &anthropic.Conversation{Messages: tt.msgs}
			turn, err := ts.Turn(conv, sdk.MessageNewParams{Model: "m", MaxTokens: 10})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(systemMessages(t, []byte(mustJSON(t, turn.Params)))); got != tt.want || len(turn.Added) != tt.want {
				t.Fatalf("%s: %d system messages, added %q; want %d", strat, got, turn.Added, tt.want)
			}
		}
	}
}
