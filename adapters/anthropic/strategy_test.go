package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/toolsearch/toolsearch/adapters/anthropic"
	"github.com/toolsearch/toolsearch/adapters/anthropic/anthropictest"
	"github.com/toolsearch/toolsearch/adapters/messages"
)

// systemMessages returns the system-role messages of a request body.
func systemMessages(t testing.TB, body []byte) []string {
	t.Helper()
	_, _, msgs := sections(t, body)
	var out []string
	for _, m := range msgs {
		var v struct {
			Role string `json:"role"`
		}
		_ = json.Unmarshal(m, &v)
		if v.Role == "system" {
			out = append(out, string(m))
		}
	}
	return out
}

// additionKind returns the kind of tool (tool_reference, tool_definition)
// of the tool_addition of name in a system message, or "".
func additionKind(t testing.TB, msg, name string) string {
	t.Helper()
	var m sdk.BetaMessageParam
	if err := json.Unmarshal([]byte(msg), &m); err != nil || m.OfSystem == nil {
		t.Fatalf("not a system message: %s (%v)", msg, err)
	}
	for _, c := range m.OfSystem.Content {
		a := c.OfToolAddition
		switch {
		case a == nil:
		case a.Tool.OfToolReference != nil && a.Tool.OfToolReference.Name == name:
			return "tool_reference"
		case a.Tool.OfToolDefinition != nil && mustJSON(t, a.Tool.OfToolDefinition.Definition) != "" &&
			strings.Contains(mustJSON(t, a.Tool.OfToolDefinition.Definition), `"name":"`+name+`"`):
			return "tool_definition"
		}
	}
	return ""
}

// TestStrategies runs one task under each strategy, against a stand-in
// that takes what the strategy sends, and checks what went on the wire.
func TestStrategies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		strategy anthropic.Strategy
		opts     anthropictest.Options
		// firstTools is the number of tools of the first request.
		firstTools int
		// addition is the kind of tool the second request's system message
		// adds codehost__create_issue with ("" for no system message).
		addition string
		// refs says whether the search answer holds tool_reference blocks.
		refs bool
		// sameTools says whether every request sends the same tools array.
		sameTools bool
		betas     []string
	}{
		{strategy: anthropic.Inline, firstTools: 2, sameTools: true,
			addition: "tool_definition",
			betas:    []string{anthropic.BetaToolChanges, anthropic.BetaInlineTools}},
		{strategy: anthropic.ReferenceAdd, firstTools: 90, sameTools: true,
			addition: "tool_reference",
			betas:    []string{anthropic.BetaToolChanges}},
		{strategy: anthropic.Classic, firstTools: 2, refs: true},
		{strategy: anthropic.Plain, firstTools: 2, opts: anthropictest.Options{NoReferences: true, NoSystemMessages: true, NoToolChanges: true}},
	}
	for _, tt := range tests {
		t.Run(tt.strategy.String(), func(t *testing.T) {
			t.Parallel()
			srv := anthropictest.New(t, tt.opts)
			ts := toolset(t, demoSnap(), anthropic.Config{Strategy: tt.strategy})
			conv := &anthropic.Conversation{}
			turns := run(context.Background(), t, ts, client(srv), conv, "Create an issue on the code host about the login bug")
			if rej := srv.Rejections(); len(rej) > 0 {
				t.Fatalf("refused: %q", rej)
			}
			if got := lastText(conv); !strings.Contains(got, "Done: ok: ran codehost/create_issue") {
				t.Fatalf("the model ended with %q", got)
			}
			if len(turns) != 3 {
				t.Fatalf("%d requests, want 3 (search, call, done)", len(turns))
			}
			for _, turn := range turns {
				if turn.Strategy != tt.strategy || turn.StrategyWhy != "configured" {
					t.Fatalf("turn strategy %s (%s)", turn.Strategy, turn.StrategyWhy)
				}
				if !slices.Equal(turn.Betas, tt.betas) {
					t.Fatalf("betas %q, want %q", turn.Betas, tt.betas)
				}
			}
			if turns[0].ToolsSent != tt.firstTools {
				t.Errorf("first request sent %d tools, want %d", turns[0].ToolsSent, tt.firstTools)
			}
			bodies := srv.Requests()
			sys := systemMessages(t, bodies[1])
			switch {
			case tt.addition == "" && len(sys) > 0:
				t.Errorf("unexpected system messages: %q", sys)
			case tt.addition != "" && (len(sys) != 1 || additionKind(t, sys[0], "codehost__create_issue") != tt.addition):
				t.Errorf("second request's system messages %q, want one adding codehost__create_issue by %s", sys, tt.addition)
			}
			if got := strings.Contains(string(bodies[1]), `"type":"tool_reference","tool_name"`) || strings.Contains(string(bodies[1]), `"tool_name":"codehost__create_issue","type":"tool_reference"`); got != tt.refs {
				t.Errorf("tool_reference in the search answer: %v, want %v", got, tt.refs)
			}
			if tt.sameTools {
				first, _, _ := sections(t, bodies[0])
				for i, b := range bodies[1:] {
					tools, _, _ := sections(t, b)
					if mustJSON(t, tools) != mustJSON(t, first) {
						t.Fatalf("request %d changed the tools array", i+2)
					}
				}
				if turns[1].ToolsInline+len(turns[1].Added) == 0 {
					t.Errorf("the second turn added nothing: %+v", turns[1])
				}
			}
			if tt.strategy == anthropic.Plain {
				for _, b := range bodies {
					if strings.Contains(string(b), "defer_loading") || strings.Contains(string(b), "tool_reference") {
						t.Fatalf("a plain request holds tool search: %s", b)
					}
				}
			}
		})
	}
}

// TestAutoStrategy checks the choice per endpoint and model, and that its
// reason is given.
func TestAutoStrategy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		endpoint, model string
		cfg             anthropic.Config
		want            anthropic.Strategy
		why             string
	}{
		{endpoint: "", model: "claude-sonnet-4-5", want: anthropic.Inline, why: "Anthropic's API"},
		{endpoint: "https://api.anthropic.com", model: "claude-opus-4-1", want: anthropic.Inline, why: "Anthropic's API"},
		{endpoint: "https://llm-gateway.example.com", model: "claude-sonnet-4-5", want: anthropic.Classic, why: "not Anthropic's API"},
		{endpoint: "", model: "claude-3-5-haiku-latest", want: anthropic.Plain, why: "predates tool search"},
		{endpoint: "", model: "m", cfg: anthropic.Config{Wire: anthropic.Expand}, want: anthropic.Plain, why: "Wire Expand"},
		{endpoint: "", model: "m", cfg: anthropic.Config{Search: anthropic.ServerBM25}, want: anthropic.Classic, why: "server-bm25"},
		{endpoint: "", model: "m", cfg: anthropic.Config{Strategy: anthropic.ReferenceAdd}, want: anthropic.ReferenceAdd, why: "configured"},
	}
	for _, tt := range tests {
		t.Run(tt.endpoint+" "+tt.model, func(t *testing.T) {
			t.Parallel()
			cfg := tt.cfg
			cfg.Endpoint = tt.endpoint
			ts := toolset(t, demoSnap(), cfg)
			got, why := ts.Strategy(tt.model)
			if got != tt.want || !strings.Contains(why, tt.why) {
				t.Fatalf("Strategy(%q) = %s (%s), want %s (%s)", tt.model, got, why, tt.want, tt.why)
			}
		})
	}
}

// TestDowngrade starts a session at a strategy the endpoint refuses: the
// first refusal is retried once with the plainer strategy, the task ends
// well, and the downgrade is remembered for the endpoint and model, so a
// new Toolset of the same session starts there without a refusal.
func TestDowngrade(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		opts  anthropictest.Options
		start anthropic.Strategy
		// want are the strategies of the session's requests, in order
		// (retries included), after the first.
		want      anthropic.Strategy
		refusals  int
		refusedBy string
	}{
		{name: "no inline tools", opts: anthropictest.Options{NoInlineTools: true}, start: anthropic.Inline,
			want: anthropic.ReferenceAdd, refusals: 1, refusedBy: "tool_definition"},
		{name: "inline beta unknown", opts: anthropictest.Options{RefuseBetas: []string{anthropic.BetaInlineTools}}, start: anthropic.Inline,
			want: anthropic.ReferenceAdd, refusals: 1, refusedBy: anthropic.BetaInlineTools},
		{name: "no tool changes", opts: anthropictest.Options{NoToolChanges: true}, start: anthropic.Inline,
			want: anthropic.Classic, refusals: 1, refusedBy: "tool_addition"},
		{name: "no system messages", opts: anthropictest.Options{NoSystemMessages: true}, start: anthropic.ReferenceAdd,
			want: anthropic.Classic, refusals: 1, refusedBy: "role"},
		{name: "a relay without tool search", opts: anthropictest.Options{NoReferences: true}, start: anthropic.Classic,
			want: anthropic.Plain, refusals: 1, refusedBy: "defer_loading"},
		{name: "a relay without anything", opts: anthropictest.Options{NoReferences: true, NoSystemMessages: true}, start: anthropic.Inline,
			want: anthropic.Plain, refusals: 2, refusedBy: "role"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			srv := anthropictest.New(t, tt.opts)
			caps := &anthropic.Capabilities{}
			cfg := anthropic.Config{Strategy: tt.start, Endpoint: srv.URL, Capabilities: caps}
			conv := &anthropic.Conversation{}
			run(ctx, t, toolset(t, demoSnap(), cfg), client(srv), conv, "Create an issue on the code host about the login bug")
			run(ctx, t, toolset(t, demoSnap(), cfg), client(srv), conv, "post a message to the team chat channel")
			if got := lastText(conv); !strings.Contains(got, "Done: ok: ran teamchat/") {
				t.Fatalf("the model ended with %q", got)
			}
			rej := srv.Rejections()
			if len(rej) != tt.refusals || !strings.Contains(rej[0], tt.refusedBy) {
				t.Fatalf("refusals %q, want %d, the first naming %q", rej, tt.refusals, tt.refusedBy)
			}
			got, why, ok := caps.Get(srv.URL, "claude-test")
			if !ok || got != tt.want || !strings.Contains(why, "downgraded from") {
				t.Fatalf("remembered %s (%s, %v), want %s", got, why, ok, tt.want)
			}
			// A new session's Toolset sharing the memory starts lower.
			later := toolset(t, demoSnap(), cfg)
			if s, _ := later.Strategy("claude-test"); s != tt.want {
				t.Fatalf("a later Toolset starts at %s, want %s", s, tt.want)
			}
			conv2 := &anthropic.Conversation{}
			run(ctx, t, later, client(srv), conv2, "scale the web deployment on kubernetes")
			if n := len(srv.Rejections()); n != tt.refusals {
				t.Fatalf("%d refusals after the downgrade was remembered, want %d", n, tt.refusals)
			}
			// Another model on the same endpoint is not downgraded.
			if s, _ := later.Strategy("claude-other"); s != tt.start {
				t.Fatalf("another model starts at %s, want %s", s, tt.start)
			}
		})
	}
}

// TestSendDoesNotDowngradeOnOtherErrors keeps the strategy when the 400 is
// not a refusal of a feature.
func TestSendDoesNotDowngradeOnOtherErrors(t *testing.T) {
	t.Parallel()
	srv := anthropictest.New(t, anthropictest.Options{})
	caps := &anthropic.Capabilities{}
	ts := toolset(t, demoSnap(), anthropic.Config{Strategy: anthropic.Inline, Capabilities: caps})
	conv := &anthropic.Conversation{Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("hi"))}}
	c := client(srv)
	// max_tokens missing: a bad request, not a capability.
	_, turn, err := ts.Send(context.Background(), &c.Messages, conv, sdk.MessageNewParams{Model: "claude-test"})
	if err == nil || !strings.Contains(err.Error(), "max_tokens") {
		t.Fatalf("error %v", err)
	}
	if turn.Strategy != anthropic.Inline || len(srv.Requests()) != 1 {
		t.Fatalf("strategy %s after %d requests", turn.Strategy, len(srv.Requests()))
	}
	if _, _, ok := caps.Get("", "claude-test"); ok {
		t.Fatal("a downgrade was remembered")
	}
}

func TestReadRefusal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		msg     string
		feature string
		below   anthropic.Strategy
	}{
		{msg: "messages.3.content.0.tool: Input tag 'tool_definition' found using 'type' does not match any of the expected tags", feature: "tool_definition", below: anthropic.ReferenceAdd},
		{msg: "messages.3.content.0: Input tag 'tool_addition' found using 'type' does not match any of the expected tags: 'text'", feature: "tool_addition", below: anthropic.Classic},
		{msg: "messages.3.role: Input should be 'user' or 'assistant'", feature: "system message", below: anthropic.Classic},
		{msg: "Unexpected value(s) `inline-tools-2026-09-15` for the `anthropic-beta` header.", feature: anthropic.BetaInlineTools, below: anthropic.ReferenceAdd},
		{msg: "Unexpected value(s) `mid-conversation-tool-changes-2026-07-01` for the `anthropic-beta` header.", feature: anthropic.BetaToolChanges, below: anthropic.Classic},
		{msg: "messages.2.content.0.content.0: Input tag 'tool_reference' found using 'type' does not match any of the expected tags", feature: "tool_reference", below: anthropic.Plain},
		{msg: "tools.3.defer_loading: Extra inputs are not permitted", feature: "defer_loading", below: anthropic.Plain},
		{msg: "Tool reference 'x' not found in available tools"},
		{msg: "max_tokens: Field required"},
		{msg: "messages.0.content.0.text: Input should be a valid string"},
		{msg: ""},
	}
	for _, tt := range tests {
		r, ok := anthropic.RefusalOf(tt.msg)
		if ok != (tt.feature != "") || r.Feature != tt.feature || (ok && r.Below != tt.below) {
			t.Errorf("RefusalOf(%q) = %+v, %v; want %q below %s", tt.msg, r, ok, tt.feature, tt.below)
		}
	}
	// Through the SDK's error type: only a 400 counts.
	srv := anthropictest.New(t, anthropictest.Options{NoSystemMessages: true})
	c := client(srv)
	p := sdk.MessageNewParams{Model: "m", MaxTokens: 10, Messages: []sdk.MessageParam{
		sdk.NewUserMessage(sdk.NewTextBlock("hi")), {OfSystem: &sdk.SystemMessageParam{Content: []sdk.TextBlockParam{{Text: "x"}}}}}}
	_, err := c.Messages.New(context.Background(), p, option.WithMaxRetries(0))
	var apiErr *sdk.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("error %v", err)
	}
	if r, ok := anthropic.ReadRefusal(err); !ok || r.Feature != "system message" {
		t.Fatalf("ReadRefusal = %+v, %v", r, ok)
	}
	if _, ok := anthropic.ReadRefusal(fmt.Errorf("wrapped: %w", errors.New("429 Too Many Requests"))); ok {
		t.Fatal("a 429 read as a refusal")
	}
}

func FuzzRefusalOf(f *testing.F) {
	f.Add("messages.3.role: Input should be 'user' or 'assistant'")
	f.Add("Unexpected value(s) `inline-tools-2026-09-15` for the `anthropic-beta` header.")
	f.Add("Input tag 'tool_reference' found using 'type' does not match any of the expected tags")
	f.Fuzz(func(t *testing.T, msg string) {
		r, ok := anthropic.RefusalOf(msg)
		if !ok {
			return
		}
		if r.Feature == "" || r.Below < anthropic.ReferenceAdd || r.Below > anthropic.Plain || len(r.Message) > 300+len("…") {
			t.Fatalf("RefusalOf(%q) = %+v", msg, r)
		}
	})
}

// TestBetaNames checks that the beta names package messages spells out
// are the SDK's.
func TestBetaNames(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ ours, sdk string }{
		{messages.BetaToolChanges, string(sdk.AnthropicBetaMidConversationToolChanges2026_07_01)},
		{messages.BetaInlineTools, string(sdk.AnthropicBetaInlineTools2026_09_15)},
	} {
		if c.ours != c.sdk {
			t.Errorf("messages names the beta %q, the SDK %q", c.ours, c.sdk)
		}
	}
}
