package openaitest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

const (
	searchTool = `{"type":"tool_search","execution":"client","description":"find tools","parameters":{"type":"object","properties":{"query":{"type":"string"}}}}`
	loadedFn   = `{"type":"function","name":"gh__list_issues","description":"List issues","parameters":{"type":"object"},"strict":false}`
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			check(t, New(t, Options{}), "/v1/responses", tt.body, tt.wantErr)
		})
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
