package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/toolsearch/toolsearch/adapters/anthropic/anthropictest"
	"github.com/toolsearch/toolsearch/core/discovery"
	"github.com/toolsearch/toolsearch/proxy"
	"github.com/toolsearch/toolsearch/proxy/proxytest"
)

// Betas of the strategies, as clients send them.
const (
	betaToolChanges = "mid-conversation-tool-changes-2026-07-01"
	betaInlineTools = "inline-tools-2026-09-15"
	betaToolSearch  = "advanced-tool-use-2025-11-20"
)

// The tool every round trip discovers and calls, and what the model calls
// it with.
const (
	slackTool     = "mcp__slack__post_message"
	slackDef      = `{"name":"mcp__slack__post_message","description":"Post a message to a Slack channel","input_schema":{"type":"object","properties":{"channel":{"type":"string"},"text":{"type":"string"}},"required":["channel","text"]}}`
	searchToolDef = `{"name":"tool_search","description":"Search the deferred tools","input_schema":{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}}`
	roundTripTask = "post a message to the slack channel"
	toolOutput    = "posted to #general"
)

// callInput is the input the stand-in's model gives the discovered tool.
var callInput = map[string]any{"channel": "#general", "text": "hello from the round trip"}

// inputModel is the scripted model, calling every tool but the search tool
// with callInput.
func inputModel(req *anthropictest.Request) anthropictest.Reply {
	r := anthropictest.ScriptedModel(req)
	for _, c := range r.Content {
		if m, ok := c.(map[string]any); ok && m["type"] == "tool_use" && m["name"] != req.ClientSearch {
			m["input"] = callInput
		}
	}
	return r
}

// upstreamKind is an endpoint that takes one strategy and the plainer
// ones, and refuses the richer ones with the 400 such an endpoint gives.
type upstreamKind struct {
	name string
	opts anthropictest.Options
	// systemMessages: the endpoint takes {"role":"system"} messages.
	systemMessages bool
	// refusedBody and refusedBetas are what it refuses: JSON that must
	// not appear in a request body, and anthropic-beta values.
	refusedBody  []string
	refusedBetas []string
}

var upstreamKinds = []upstreamKind{
	{name: "inline", systemMessages: true},
	{name: "reference-add", systemMessages: true,
		opts:         anthropictest.Options{NoInlineTools: true, RefuseBetas: []string{betaInlineTools}},
		refusedBody:  []string{`"tool_definition"`},
		refusedBetas: []string{betaInlineTools}},
	{name: "classic", systemMessages: true,
		opts:         anthropictest.Options{NoToolChanges: true, RefuseBetas: []string{betaToolChanges, betaInlineTools}},
		refusedBody:  []string{`"tool_addition"`, `"tool_definition"`},
		refusedBetas: []string{betaToolChanges, betaInlineTools}},
	{name: "plain",
		opts:         anthropictest.Options{NoReferences: true, NoToolChanges: true, RefuseBetas: []string{betaToolChanges, betaInlineTools, betaToolSearch}},
		refusedBody:  []string{`"tool_addition"`, `"tool_definition"`, `"tool_reference"`, `"defer_loading"`, `"role":"system"`},
		refusedBetas: []string{betaToolChanges, betaInlineTools, betaToolSearch}},
}

// clientStyle is how a client hands a found tool to the model: inline (the
// richest, a tool_addition holding its definition) or classic (a
// tool_reference in the search's tool_result, the catalog deferred in
// tools, as Claude Code does).
type clientStyle struct {
	name  string
	betas []string
}

var clientStyles = []clientStyle{
	{name: "inline", betas: []string{betaToolChanges, betaInlineTools}},
	{name: "classic", betas: []string{betaToolSearch}},
}

// expectFor is what the upstream must receive once the tool is found (the
// strategy the proxy used) and how many refusals the proxy meets first:
// the client's form as sent where the upstream takes it, else one probe
// and the richest form the upstream takes. A tool a tool_addition found
// reaches a classic or plain upstream as an ordinary tool (no reference in
// the history loads it), as package anthropic renders it after a
// downgrade.
func expectFor(style, kind string) (form string, probes int) {
	switch {
	case style == "classic" && kind == "plain":
		return "ordinary", 1
	case style == "classic":
		return "classic", 0
	case kind == "inline":
		return "inline", 0
	case kind == "reference-add":
		return "reference-add", 1
	}
	return "ordinary", 1
}

// upstreamForm reads which strategy a request body used for the found
// tool, and checks that its tools array agrees.
func upstreamForm(t *testing.T, body []byte) string {
	t.Helper()
	var req struct {
		Tools []struct {
			Name         string `json:"name"`
			DeferLoading bool   `json:"defer_loading"`
		} `json:"tools"`
		Messages json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("upstream body: %v", err)
	}
	inTools, deferred := false, false
	for _, tl := range req.Tools {
		if tl.Name == slackTool {
			inTools, deferred = true, tl.DeferLoading
		}
	}
	msgs := string(req.Messages)
	var form string
	switch {
	case strings.Contains(msgs, `"tool_definition"`):
		form = "inline"
		if inTools {
			t.Errorf("inline: %s is in tools too", slackTool)
		}
	case strings.Contains(msgs, `"tool_addition"`):
		form = "reference-add"
		if !inTools || !deferred {
			t.Errorf("reference-add: %s in tools %v, deferred %v (want declared with defer_loading)", slackTool, inTools, deferred)
		}
	case strings.Contains(msgs, `"tool_reference"`):
		form = "classic"
		if !inTools || !deferred {
			t.Errorf("classic: %s in tools %v, deferred %v (want declared with defer_loading)", slackTool, inTools, deferred)
		}
	default:
		form = "ordinary"
		if !inTools || deferred {
			t.Errorf("ordinary: %s in tools %v, deferred %v (want an ordinary tool)", slackTool, inTools, deferred)
		}
	}
	return form
}

// clientTrip is what a client saw of one search → load → call round trip.
type clientTrip struct {
	Searched   string         `json:"searched"`
	SearchStop string         `json:"searchStop"`
	Called     string         `json:"called"`
	CallID     string         `json:"callID"`
	CallStop   string         `json:"callStop"`
	Input      map[string]any `json:"input"`
	Final      string         `json:"final"`
}

// goRoundTrip drives the round trip with the Go SDK's beta Messages API,
// every request built and every answer read with the SDK's own types.
func goRoundTrip(ctx context.Context, t *testing.T, url, style string, stream bool) clientTrip {
	t.Helper()
	client := goClient(url)
	var betas []sdk.AnthropicBeta
	for _, s := range clientStyles {
		if s.name == style {
			for _, b := range s.betas {
				betas = append(betas, sdk.AnthropicBeta(b))
			}
		}
	}
	tools := []sdk.BetaToolUnionParam{
		param.Override[sdk.BetaToolUnionParam](json.RawMessage(bashTool)),
		param.Override[sdk.BetaToolUnionParam](json.RawMessage(searchToolDef)),
	}
	if style == "classic" {
		for _, d := range deferredTools {
			tools = append(tools, param.Override[sdk.BetaToolUnionParam](json.RawMessage(d)))
		}
	}
	params := sdk.BetaMessageNewParams{
		Model: "claude-standin", MaxTokens: 512, Betas: betas, Tools: tools,
		Messages: []sdk.BetaMessageParam{sdk.NewBetaUserMessage(sdk.NewBetaTextBlock(roundTripTask))},
	}
	send := func() *sdk.BetaMessage {
		t.Helper()
		if !stream {
			m, err := client.Beta.Messages.New(ctx, params)
			if err != nil {
				t.Fatalf("Messages.New: %v", err)
			}
			return m
		}
		s := client.Beta.Messages.NewStreaming(ctx, params)
		defer s.Close()
		var m sdk.BetaMessage
		for s.Next() {
			if err := m.Accumulate(s.Current()); err != nil {
				t.Fatalf("accumulating the stream: %v", err)
			}
		}
		if err := s.Err(); err != nil {
			t.Fatalf("stream: %v", err)
		}
		return &m
	}
	var rt clientTrip
	toolUse := func(m *sdk.BetaMessage) (sdk.BetaToolUseBlock, bool) {
		for _, b := range m.Content {
			if b.Type == "tool_use" {
				return b.AsToolUse(), true
			}
		}
		return sdk.BetaToolUseBlock{}, false
	}

	m1 := send()
	rt.SearchStop = string(m1.StopReason)
	use, ok := toolUse(m1)
	if !ok {
		t.Fatalf("first answer has no tool_use: %v", m1.RawJSON())
	}
	rt.Searched = use.Name
	params.Messages = append(params.Messages, m1.ToParam())
	if style == "classic" {
		ref := sdk.BetaToolResultBlockParam{ToolUseID: use.ID, Content: []sdk.BetaToolResultBlockParamContentUnion{
			{OfToolReference: &sdk.BetaToolReferenceBlockParam{ToolName: slackTool}}}}
		params.Messages = append(params.Messages, sdk.NewBetaUserMessage(sdk.BetaContentBlockParamUnion{OfToolResult: &ref}))
	} else {
		params.Messages = append(params.Messages,
			sdk.NewBetaUserMessage(sdk.NewBetaToolResultBlock(use.ID, discovery.LoadedText([]string{slackTool}), false)),
			sdk.BetaMessageParam{OfSystem: &sdk.BetaSystemMessageParam{Content: []sdk.BetaSystemMessageParamContentUnion{{
				OfToolAddition: &sdk.BetaRequestToolAdditionBlockParam{Tool: sdk.BetaRequestToolAdditionBlockToolUnionParam{
					OfToolDefinition: &sdk.BetaToolChangeToolDefinitionParam{Definition: param.Override[sdk.BetaToolUnionParam](json.RawMessage(slackDef))},
				}},
			}}}})
	}

	m2 := send()
	rt.CallStop = string(m2.StopReason)
	call, ok := toolUse(m2)
	if !ok {
		t.Fatalf("second answer has no tool_use: %v", m2.RawJSON())
	}
	rt.Called, rt.CallID = call.Name, call.ID
	if err := json.Unmarshal([]byte(call.JSON.Input.Raw()), &rt.Input); err != nil {
		t.Fatalf("tool_use input %s: %v", call.JSON.Input.Raw(), err)
	}
	params.Messages = append(params.Messages, m2.ToParam(), sdk.NewBetaUserMessage(sdk.NewBetaToolResultBlock(call.ID, toolOutput, false)))

	m3 := send()
	for _, b := range m3.Content {
		if b.Type == "text" {
			rt.Final = b.AsText().Text
		}
	}
	return rt
}

// strategyCase is one upstream kind and client style, with its own
// stand-in and proxy (the proxy learns per model, so cases share nothing).
type strategyCase struct {
	name   string
	kind   upstreamKind
	style  string
	stream bool
	up     *proxytest.Upstream
	url    string
}

func newStrategyCase(t *testing.T, kind upstreamKind, style, client string, stream bool) *strategyCase {
	opts := kind.opts
	opts.SearchToolName = "tool_search"
	opts.Model = inputModel
	up := proxytest.New(t, proxytest.Options{Options: opts, SystemMessages: kind.systemMessages})
	_, url := startProxy(t, proxy.Config{Upstream: up.URL, Mode: proxy.ModeEmulate})
	mode := "create"
	if stream {
		mode = "stream"
	}
	return &strategyCase{name: fmt.Sprintf("%s/%s-client/%s/%s", kind.name, style, client, mode), kind: kind, style: style, stream: stream, up: up, url: url}
}

// check asserts what the client saw and what the upstream received.
func (c *strategyCase) check(t *testing.T, rt clientTrip) {
	t.Helper()
	if rt.Searched != "tool_search" || rt.SearchStop != "tool_use" {
		t.Errorf("search: called %q, stop %q", rt.Searched, rt.SearchStop)
	}
	if rt.Called != slackTool || rt.CallStop != "tool_use" || !reflect.DeepEqual(rt.Input, callInput) {
		t.Errorf("call: %q with %v, stop %q (want %s with %v)", rt.Called, rt.Input, rt.CallStop, slackTool, callInput)
	}
	if want := "Done: " + toolOutput; rt.Final != want {
		t.Errorf("final text %q, want %q", rt.Final, want)
	}

	wantForm, probes := expectFor(c.style, c.kind.name)
	if rej := c.up.Inner.Rejections(); len(rej) != probes {
		t.Errorf("upstream refused %d requests, want %d: %q", len(rej), probes, rej)
	}
	var reqs []proxytest.Recorded
	for _, r := range c.up.Requests() {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URI, "/v1/messages") {
			reqs = append(reqs, r)
		}
	}
	if len(reqs) != 3+probes {
		t.Fatalf("upstream got %d message requests, want %d (3 and the probes)", len(reqs), 3+probes)
	}
	for i, r := range reqs {
		var top struct {
			Stream bool `json:"stream"`
		}
		if err := json.Unmarshal(r.Body, &top); err != nil || top.Stream != c.stream {
			t.Errorf("request %d: stream %v (%v), want %v", i, top.Stream, err, c.stream)
		}
	}
	// After the probe, nothing the upstream refused is sent again.
	for i, r := range reqs[probes:] {
		for _, s := range c.kind.refusedBody {
			if strings.Contains(string(r.Body), s) {
				t.Errorf("request %d after the probe carries %s", i+probes, s)
			}
		}
		for _, b := range c.kind.refusedBetas {
			if slices.Contains(betaValues(r.Header), b) {
				t.Errorf("request %d after the probe carries the beta %s", i+probes, b)
			}
		}
	}
	for i, r := range reqs[probes+1:] {
		if got := upstreamForm(t, r.Body); got != wantForm {
			t.Errorf("request %d reached the upstream as %s, want %s", i+probes+1, got, wantForm)
		}
	}
	// The tool's result went up answering the model's call.
	last := string(reqs[len(reqs)-1].Body)
	if !strings.Contains(last, `"tool_use_id":"`+rt.CallID+`"`) || !strings.Contains(last, toolOutput) {
		t.Errorf("the last request does not answer %s with its result: %s", rt.CallID, last)
	}
}

func betaValues(h http.Header) []string {
	var out []string
	for _, v := range h.Values("anthropic-beta") {
		for _, b := range strings.Split(v, ",") {
			if b = strings.TrimSpace(b); b != "" {
				out = append(out, b)
			}
		}
	}
	return out
}

// TestStrategiesGoSDK drives search → load → call with the Go SDK through
// the proxy, for each kind of upstream and each client style, streaming
// and not.
func TestStrategiesGoSDK(t *testing.T) {
	t.Parallel()
	for _, kind := range upstreamKinds {
		for _, style := range clientStyles {
			for _, stream := range []bool{false, true} {
				c := newStrategyCase(t, kind, style.name, "go", stream)
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					c.check(t, goRoundTrip(testCtx(t), t, c.url, c.style, stream))
				})
			}
		}
	}
}

// TestRetriesOnePerFeature sends one request to an upstream that refuses
// one feature per answer: the proxy retries once per refused feature, up
// to three times in one request (inline refused, then tool_addition, then
// tool_reference), each time lower, before the client sees anything; a
// refusal that no lower level helps ends the retries.
func TestRetriesOnePerFeature(t *testing.T) {
	t.Parallel()
	// A request mid-conversation: an earlier search loaded a tool by
	// reference, a later one added slack's definition inline.
	body := mustMarshal(t, map[string]any{
		"model": "claude-standin", "max_tokens": 256,
		"tools": []json.RawMessage{json.RawMessage(bashTool), json.RawMessage(searchToolDef), json.RawMessage(deferredTools[2])},
		"messages": []json.RawMessage{
			json.RawMessage(`{"role":"user","content":"open a pull request, then post a message to the slack channel"}`),
			json.RawMessage(`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"tool_search","input":{"query":"pull request"}}]}`),
			json.RawMessage(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"tool_reference","tool_name":"mcp__github__create_pull_request"}]}]}`),
			json.RawMessage(`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_2","name":"tool_search","input":{"query":"slack"}}]}`),
			json.RawMessage(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_2","content":"Loaded tools: mcp__slack__post_message"}]}`),
			json.RawMessage(`{"role":"system","content":[{"type":"tool_addition","tool":{"type":"tool_definition","definition":` + slackDef + `}}]}`),
		},
	})
	header := http.Header{"Anthropic-Beta": {betaToolChanges + "," + betaInlineTools + "," + betaToolSearch}}
	refusal := func(tag string) string {
		return "messages.5.content.0: Input tag '" + tag + "' found using 'type' does not match any of the expected tags"
	}
	for _, tc := range []struct {
		name string
		// chain are the features refused, in order: the first one a body
		// carries is refused with the 400 that names it.
		chain []string
		// takesReferences: the stand-in behind takes tool search (else it
		// refuses it too, as the endpoints that refuse the chain's last
		// feature do).
		takesReferences bool
		wantStatus      int
		wantCalls       int
		// wantLast is what the request that got through carries.
		wantLast, wantNotLast []string
	}{
		{name: "three features", chain: []string{"tool_definition", "tool_addition", "tool_reference"}, wantStatus: 200, wantCalls: 4,
			wantLast: []string{"Loaded tools: mcp__github__create_pull_request", "<system-reminder>"}, wantNotLast: []string{"tool_definition", "tool_addition", "tool_reference", `"role":"system"`}},
		{name: "two features", chain: []string{"tool_addition", "tool_reference"}, wantStatus: 200, wantCalls: 3,
			wantLast: []string{"Loaded tools: mcp__github__create_pull_request"}, wantNotLast: []string{"tool_addition", "tool_reference"}},
		{name: "inline only", chain: []string{"tool_definition"}, takesReferences: true, wantStatus: 200, wantCalls: 2,
			wantLast:    []string{`"tool_addition"`, `"tool":{"name":"mcp__slack__post_message","type":"tool_reference"}`, `"tool_name":"mcp__github__create_pull_request"`},
			wantNotLast: []string{"tool_definition"}},
		{name: "inline, then tool search", chain: []string{"tool_definition"}, wantStatus: 200, wantCalls: 3,
			wantLast:    []string{`"tool":{"name":"mcp__slack__post_message","type":"tool_reference"}`, "Loaded tools: mcp__github__create_pull_request"},
			wantNotLast: []string{"tool_definition", "defer_loading"}},
		{name: "one feature", chain: []string{"tool_reference"}, wantStatus: 200, wantCalls: 2,
			wantLast: []string{`"tool_definition"`, "Loaded tools: mcp__github__create_pull_request"}, wantNotLast: []string{`"tool_reference"`, "defer_loading"}},
		// The second refusal names nothing the request used but points at
		// its system message: one step down (folded), then the last
		// refusal reaches the client.
		{name: "nothing lower helps", chain: []string{"tool_reference", "model"}, wantStatus: 400, wantCalls: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			backend := proxytest.New(t, proxytest.Options{Options: anthropictest.Options{NoReferences: !tc.takesReferences, SearchToolName: "tool_search", Model: inputModel}, SystemMessages: true})
			front, seen := refusingFront(t, backend.URL, func(b []byte) (string, bool) {
				for _, f := range tc.chain {
					if bytes.Contains(b, []byte(`"`+f+`"`)) || (f == "tool_reference" && bytes.Contains(b, []byte(`"defer_loading"`))) {
						return refusal(f), true
					}
				}
				return "", false
			})
			_, url := startProxy(t, proxy.Config{Upstream: front, Mode: proxy.ModeEmulate})
			status, _, out := postJSON(testCtx(t), t, url+"/v1/messages", header, body)
			calls := seen()
			if status != tc.wantStatus || len(calls) != tc.wantCalls {
				t.Fatalf("status %d after %d upstream calls, want %d after %d: %s", status, len(calls), tc.wantStatus, tc.wantCalls, out)
			}
			if status != 200 {
				var e struct{ Type string }
				if json.Unmarshal(out, &e) != nil || e.Type != "error" {
					t.Errorf("refusal not in the API's error shape: %s", out)
				}
				return
			}
			var m sdk.Message
			if err := json.Unmarshal(out, &m); err != nil || m.Type != "message" {
				t.Fatalf("answer %s: %v", out, err)
			}
			last := string(calls[len(calls)-1])
			for _, s := range tc.wantLast {
				if !strings.Contains(last, s) {
					t.Errorf("the request that got through lacks %s: %s", s, last)
				}
			}
			for _, s := range tc.wantNotLast {
				if strings.Contains(last, s) {
					t.Errorf("the request that got through still carries %s: %s", s, last)
				}
			}
			// The next request of the model goes at the learnt level at once.
			status, _, out = postJSON(testCtx(t), t, url+"/v1/messages", header, body)
			n := len(seen())
			if status != 200 || n != tc.wantCalls+1 {
				t.Errorf("second request: status %d, %d upstream calls in all (want 200, %d): %s", status, n, tc.wantCalls+1, out)
			}
		})
	}
}

// TestStrategiesTypeScriptSDK drives the same round trips as
// TestStrategiesGoSDK with the official TypeScript SDK (@anthropic-ai/sdk,
// pinned in package.json), all cases in one node process.
func TestStrategiesTypeScriptSDK(t *testing.T) {
	t.Parallel()
	node := nodeOrSkip(t)
	type tsCase struct {
		Name   string `json:"name"`
		URL    string `json:"url"`
		Style  string `json:"style"`
		Stream bool   `json:"stream"`
		Task   string `json:"task"`
		Output string `json:"output"`
	}
	var cases []*strategyCase
	var in []tsCase
	for _, kind := range upstreamKinds {
		for _, style := range clientStyles {
			for _, stream := range []bool{false, true} {
				c := newStrategyCase(t, kind, style.name, "ts", stream)
				cases = append(cases, c)
				in = append(in, tsCase{Name: c.name, URL: c.url, Style: c.style, Stream: stream, Task: roundTripTask, Output: toolOutput})
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("testdata", "tsstrategies.mjs"))
	cmd.Env = append(os.Environ(), "CASES="+string(mustMarshal(t, in)))
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("node: %v\n%s\n%s", err, out, stderr)
	}
	var got map[string]struct {
		clientTrip
		Error string `json:"error"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node's output %s: %v", out, err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rt, ok := got[c.name]
			switch {
			case !ok:
				t.Fatalf("node printed nothing for the case")
			case rt.Error != "":
				t.Fatalf("the SDK failed: %s", rt.Error)
			}
			c.check(t, rt.clientTrip)
		})
	}
}

// nodeOrSkip returns node's path, or skips the test when node or the SDK
// is absent.
func nodeOrSkip(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	if _, err := os.Stat(filepath.Join("..", "node_modules", "@anthropic-ai", "sdk", "package.json")); err != nil {
		t.Skip("node_modules/@anthropic-ai/sdk is absent: run `npm ci` at the repository root")
	}
	return node
}
