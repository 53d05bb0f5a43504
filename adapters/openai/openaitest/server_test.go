package openaitest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
)

const (
	searchTool = `{"type":"tool_search","execution":"client","description":"find tools","parameters":{"type":"object","properties":{"query":{"type":"string"}}}}`
	loadedFn   = `{"type":"function","name":"gh__list_issues","description":"List issues","parameters":{"type":"object"},"strict":false}`
	searchFn   = `{"type":"function","name":"tool_search","description":"find tools","parameters":{"type":"object","properties":{"query":{"type":"string"}}},"strict":false}`
	added      = `{"type":"additional_tools","role":"developer","tools":[{"type":"namespace","name":"gh__issue","description":"issues","tools":[{"type":"function","name":"create_issue","parameters":{"type":"object"}}]}]}`
	deferredFn = `{"type":"function","name":"gh__create_issue","parameters":{"type":"object"},"strict":false,"defer_loading":true}`
	user       = `{"role":"user","content":"create an issue"}`
	searchCall = `{"type":"tool_search_call","call_id":"call_s","execution":"client","status":"completed","arguments":{"query":"issue"}}`
	searchOut  = `{"type":"tool_search_output","call_id":"call_s","execution":"client","status":"completed","tools":[{"type":"namespace","name":"gh__issue","description":"issues","tools":[{"type":"function","name":"create_issue","parameters":{"type":"object"},"defer_loading":true}]}]}`
)

func responsesBody(tools, input string) string {
	return `{"model":"gpt-test","tools":[` + tools + `],"input":[` + input + `]}`
}

func TestResponsesValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		body    string
		wantErr string
	}{
		{name: "valid", body: responsesBody(searchTool+","+loadedFn, user)},
		{name: "input as a string", body: `{"model":"m","input":"hello"}`},
		{name: "deferred without tool_search", body: responsesBody(loadedFn+","+deferredFn, user), wantErr: "require a tool_search tool"},
		{name: "every tool deferred", body: responsesBody(deferredFn, user), wantErr: "require a tool_search tool"},
		{name: "namespace without tools", body: responsesBody(searchTool+`,{"type":"namespace","name":"x","description":"d","tools":[]}`, user), wantErr: "at least one tool"},
		{name: "bad execution", body: responsesBody(`{"type":"tool_search","execution":"elsewhere"}`, user), wantErr: "expected 'server' or 'client'"},
		{name: "bad function name", body: responsesBody(`{"type":"function","name":"a.b","parameters":{"type":"object"}}`, user), wantErr: "does not match pattern"},
		{name: "schema not an object", body: responsesBody(`{"type":"function","name":"a","parameters":{"type":"string"}}`, user), wantErr: "type: \"object\""},
		{name: "search call without output", body: responsesBody(searchTool, user+","+searchCall), wantErr: "No tool search output found for tool search call call_s"},
		{name: "search output without call", body: responsesBody(searchTool, user+","+searchOut), wantErr: "No tool search call found"},
		{name: "loaded function called with its namespace", body: responsesBody(searchTool, user+","+searchCall+","+searchOut+
			`,{"type":"function_call","call_id":"call_f","name":"create_issue","namespace":"gh__issue","arguments":"{}"},{"type":"function_call_output","call_id":"call_f","output":"ok"}`)},
		{name: "function call without namespace", body: responsesBody(searchTool, user+","+searchCall+","+searchOut+
			`,{"type":"function_call","call_id":"call_f","name":"create_issue","arguments":"{}"},{"type":"function_call_output","call_id":"call_f","output":"ok"}`),
			wantErr: "neither in tools nor loaded"},
		{name: "function call without output", body: responsesBody(loadedFn, user+`,{"type":"function_call","call_id":"call_f","name":"gh__list_issues","arguments":"{}"}`),
			wantErr: "No tool output found for function call call_f"},
		{name: "output without call", body: responsesBody(loadedFn, user+`,{"type":"function_call_output","call_id":"call_x","output":"ok"}`),
			wantErr: "No tool call found for function call output with call_id call_x"},
		{name: "unknown item", body: responsesBody(loadedFn, user+`,{"type":"mystery"}`), wantErr: "'mystery'"},
		{name: "additional tools, then a call to what they added", body: responsesBody(searchFn, user+","+added+
			`,{"type":"function_call","call_id":"call_f","name":"create_issue","namespace":"gh__issue","arguments":"{}"},{"type":"function_call_output","call_id":"call_f","output":"ok"}`)},
		{name: "a call before the additional tools", body: responsesBody(searchFn, user+
			`,{"type":"function_call","call_id":"call_f","name":"create_issue","namespace":"gh__issue","arguments":"{}"},{"type":"function_call_output","call_id":"call_f","output":"ok"},`+added),
			wantErr: "neither in tools nor loaded"},
		{name: "additional tools from the user", body: responsesBody(searchFn, user+`,{"type":"additional_tools","role":"user","tools":[`+loadedFn+`]}`),
			wantErr: "Invalid value: 'user'. Supported values are: 'developer'."},
		{name: "additional tools without tools", body: responsesBody(searchFn, user+`,{"type":"additional_tools","role":"developer","tools":[]}`),
			wantErr: "Missing required parameter: 'input[1].tools'."},
		{name: "additional tools deferred without tool_search", body: responsesBody(searchFn, user+`,{"type":"additional_tools","role":"developer","tools":[`+deferredFn+`]}`),
			wantErr: "require a tool_search tool in the same request"},
		{name: "additional tools deferred beside tool_search", body: responsesBody(searchTool, user+`,{"type":"additional_tools","role":"developer","tools":[`+deferredFn+`]}`)},
		{name: "search output deferred without tool_search", body: responsesBody(searchFn, user+","+searchCall+","+searchOut),
			wantErr: "require a tool_search tool in the same request"},
		{name: "additional tools with a tool_search inside", body: responsesBody(searchFn, user+`,{"type":"additional_tools","role":"developer","tools":[`+searchTool+`]}`),
			wantErr: "belongs in the request's tools"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			check(t, New(t, Options{}), "/v1/responses", tt.body, tt.wantErr)
		})
	}
}

// TestResponsesRefusals: each strict mode refuses its feature, wherever it
// appears, and nothing else.
func TestResponsesRefusals(t *testing.T) {
	t.Parallel()
	nsTool := `{"type":"namespace","name":"gh","description":"GitHub","tools":[{"type":"function","name":"list_issues","parameters":{"type":"object"}}]}`
	nsCall := `{"type":"function_call","call_id":"call_f","name":"list_issues","namespace":"gh","arguments":"{}"},{"type":"function_call_output","call_id":"call_f","output":"ok"}`
	plain := responsesBody(searchFn+","+loadedFn, user+`,{"type":"function_call","call_id":"call_f","name":"gh__list_issues","arguments":"{}"},{"type":"function_call_output","call_id":"call_f","output":"ok"}`)
	tests := []struct {
		name    string
		opts    Options
		body    string
		wantErr string
	}{
		{name: "no namespaces: namespace tool", opts: Options{RefuseNamespaces: true}, body: responsesBody(nsTool, user),
			wantErr: "Invalid value: 'namespace'. Supported values are:"},
		{name: "no namespaces: namespace in additional tools", opts: Options{RefuseNamespaces: true}, body: responsesBody(searchFn, user+","+added),
			wantErr: "Invalid value: 'namespace'."},
		{name: "no namespaces: namespace on a call", opts: Options{RefuseNamespaces: true}, body: responsesBody(loadedFn, user+`,{"type":"function_call","call_id":"call_f","name":"gh__list_issues","namespace":"","arguments":"{}"},{"type":"function_call_output","call_id":"call_f","output":"ok"}`),
			wantErr: "Unknown parameter: 'input[1].namespace'."},
		{name: "no namespaces: plain functions pass", opts: Options{RefuseNamespaces: true}, body: plain},
		{name: "no additional tools", opts: Options{RefuseAdditionalTools: true}, body: responsesBody(searchFn, user+","+added),
			wantErr: "Invalid value: 'additional_tools'. Supported values are:"},
		{name: "no additional tools: plain functions pass", opts: Options{RefuseAdditionalTools: true}, body: plain},
		{name: "no tool search: the tool", opts: Options{RefuseToolSearch: true}, body: responsesBody(searchTool, user),
			wantErr: "Invalid value: 'tool_search'. Supported values are:"},
		{name: "no tool search: defer_loading", opts: Options{RefuseToolSearch: true}, body: responsesBody(loadedFn+","+deferredFn, user),
			wantErr: "Unknown parameter: 'tools[1].defer_loading'."},
		{name: "no tool search: its items", opts: Options{RefuseToolSearch: true}, body: responsesBody(loadedFn, user+","+searchCall),
			wantErr: "Invalid value: 'tool_search_call'."},
		{name: "no tool search: namespaces pass", opts: Options{RefuseToolSearch: true}, body: responsesBody(nsTool, user+","+nsCall)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			check(t, New(t, tt.opts), "/v1/responses", tt.body, tt.wantErr)
		})
	}
}

// TestSDKRoundTrip: requests built with the SDK's own types for the items
// and tools tool search uses pass, and the SDK reads the answers.
func TestSDKRoundTrip(t *testing.T) {
	t.Parallel()
	srv := New(t, Options{})
	c := oai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("k"), option.WithMaxRetries(0))
	ns := responses.ToolUnionParam{OfNamespace: &responses.NamespaceToolParam{Name: "gh__issue", Description: "GitHub issues",
		Tools: []responses.NamespaceToolToolUnionParam{{OfFunction: &responses.NamespaceToolToolFunctionParam{
			Name: "create_issue", Parameters: map[string]any{"type": "object"}}}}}}
	search := responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{Name: "tool_search", Parameters: map[string]any{"type": "object"}}}
	call := responses.ResponseInputItemParamOfFunctionCall(`{"query":"issue"}`, "call_s", "tool_search")
	out := responses.ResponseInputItemParamOfFunctionCallOutput("Loaded tools: gh__create_issue")
	out.OfFunctionCallOutput.CallID = param.NewOpt("call_s")
	input := responses.ResponseInputParam{
		responses.ResponseInputItemParamOfMessage("create an issue please", responses.EasyInputMessageRoleUser),
		call, out,
		responses.ResponseInputItemParamOfAdditionalTools([]responses.ToolUnionParam{ns}),
	}
	resp, err := c.Responses.New(context.Background(), responses.ResponseNewParams{Model: "gpt-test",
		Tools: []responses.ToolUnionParam{search}, Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Output) != 1 || resp.Output[0].Type != "function_call" {
		t.Fatalf("output %s", resp.RawJSON())
	}
	fc := resp.Output[0].AsFunctionCall()
	if fc.Namespace != "gh__issue" || fc.Name != "create_issue" {
		t.Fatalf("the model called %s/%s, want the added gh__issue/create_issue", fc.Namespace, fc.Name)
	}
	// The same request without the additional tools ends in a search call.
	resp, err = c.Responses.New(context.Background(), responses.ResponseNewParams{Model: "gpt-test",
		Tools: []responses.ToolUnionParam{search}, Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input[:1]}})
	if err != nil {
		t.Fatal(err)
	}
	if fc := resp.Output[0].AsFunctionCall(); fc.Name != "tool_search" || !strings.Contains(fc.Arguments, "create an issue") {
		t.Fatalf("output %s", resp.RawJSON())
	}
	if rej := srv.Rejections(); len(rej) > 0 {
		t.Fatalf("refused: %q", rej)
	}
}

func TestChatValidation(t *testing.T) {
	t.Parallel()
	fn := `{"type":"function","function":{"name":"tool_search","parameters":{"type":"object"}}}`
	call := `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"tool_search","arguments":"{\"query\":\"x\"}"}}]}`
	tests := []struct {
		name    string
		body    string
		wantErr string
	}{
		{name: "valid", body: `{"model":"m","tools":[` + fn + `],"messages":[{"role":"user","content":"hi"},` + call + `,{"role":"tool","tool_call_id":"call_1","content":"Loaded tools: a__b"}]}`},
		{name: "unanswered call", body: `{"model":"m","tools":[` + fn + `],"messages":[{"role":"user","content":"hi"},` + call + `,{"role":"user","content":"?"}]}`,
			wantErr: "The following tool_call_ids did not have response messages: call_1"},
		{name: "stray tool message", body: `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"call_9","content":"x"}]}`,
			wantErr: "must be a response to a preceeding message with 'tool_calls'"},
		{name: "bad name", body: `{"model":"m","tools":[{"type":"function","function":{"name":"a b"}}],"messages":[{"role":"user","content":"hi"}]}`,
			wantErr: "does not match pattern"},
		{name: "duplicate function", body: `{"model":"m","tools":[` + fn + `,` + fn + `],"messages":[{"role":"user","content":"hi"}]}`,
			wantErr: "duplicate function name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			check(t, New(t, Options{}), "/v1/chat/completions", tt.body, tt.wantErr)
		})
	}
}

func check(t *testing.T, srv *Server, path, body, wantErr string) {
	t.Helper()
	resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if wantErr == "" {
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		return
	}
	var e struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
	}
	if resp.StatusCode != 400 || json.Unmarshal(b, &e) != nil || e.Error.Type != "invalid_request_error" {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if !strings.Contains(e.Error.Message, wantErr) {
		t.Fatalf("error %q, want %q", e.Error.Message, wantErr)
	}
}
