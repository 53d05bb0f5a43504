package proxy

import (
	"net/http"
	"strings"
	"testing"
)

// refusalRequest is a request as Claude Code sends it with tool search on
// and a current model: a system-role message, deferred MCP tools, a
// tool_reference in the history, the tool-search and tool-change betas.
const refusalRequest = `{"model":"claude-opus-5","max_tokens":32000,"thinking":{"type":"enabled","budget_tokens":1024},` +
	`"system":[{"type":"text","text":"You are Claude Code."}],` +
	`"tools":[{"name":"ToolSearch","description":"Search","input_schema":{"type":"object","properties":{"query":{"type":"string"}}}},` +
	`{"name":"mcp__memory__create_entities","description":"Create entities","input_schema":{"type":"object"},"defer_loading":true}],` +
	`"messages":[{"role":"system","content":[{"type":"text","text":"Deferred tools: mcp__memory__create_entities"}]},` +
	`{"role":"user","content":[{"type":"text","text":"create entities"}]},` +
	`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"ToolSearch","input":{"query":"entities"}}]},` +
	`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"tool_reference","tool_name":"mcp__memory__create_entities"}]}]}]}`

func refusalHeader() http.Header {
	h := http.Header{}
	h.Set("anthropic-beta", "claude-code-20250219,advanced-tool-use-2025-11-20,mid-conversation-tool-changes-2026-07-01")
	return h
}

// TestReadRefusal reads the error texts real endpoints give (each cited)
// against the request they answered. want is the level the error makes
// the proxy drop ("inline", "fold", "emulate"), "client" when it names
// something of the request no level drops (the client's to read), and
// "nothing" when it names nothing the request used (a step down, blind).
func TestReadRefusal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, want string
	}{
		// The wording of the report that started this reader.
		{"report: unexpected role 'system'", `{"type":"error","error":{"type":"invalid_request_error","message":"messages: unexpected role 'system'"}}`, "fold"},
		// Anthropic's Messages API before system messages (quoted in
		// Maol-1997/cursor-claude-connector#3 and labring/FastGPT#1280).
		{"anthropic: Unexpected role \"system\"", `{"type":"error","error":{"type":"invalid_request_error","message":"messages: Unexpected role \"system\". The Messages API accepts a top-level ` + "`system`" + ` parameter, not \"system\" as an input message role."}}`, "fold"},
		// Anthropic, a model without system messages (anthropics/claude-code#61412).
		{"anthropic: not supported on this model", `{"type":"error","error":{"type":"invalid_request_error","message":"role 'system' is not supported on this model"},"request_id":"req_011CbHNeYKgu4eucRaFLvvNg"}`, "fold"},
		// Anthropic, a misplaced system message (anthropics/claude-code#73821).
		{"anthropic: role 'system' must precede", `{"type":"error","error":{"type":"invalid_request_error","message":"messages.67: role 'system' must precede an 'assistant' message or end the array"}}`, "fold"},
		// z.ai / GLM and Unsloth Studio, FastAPI's 422 (zai-org/GLM-5#74,
		// diegosouzapw/OmniRoute#1445, unslothai/unsloth#6050).
		{"fastapi 422: Input should be 'user' or 'assistant'", `{"detail":[{"type":"literal_error","loc":["body","messages",1,"role"],"msg":"Input should be 'user' or 'assistant'","input":"system","ctx":{"expected":"'user' or 'assistant'"}}]}`, "fold"},
		// Ollama's Anthropic layer (ollama/ollama#16372).
		{"ollama: unknown variant 'system'", `{"type":"error","error":{"type":"invalid_request_error","message":"unknown variant 'system', expected 'user' or 'assistant'"}}`, "fold"},
		// A serde-based router (aattaran/deepclaude#29), plain text.
		{"serde: unknown variant `system`", "Failed to deserialize the JSON body into the target type: messages[1].role: unknown variant `system`, expected `user` or `assistant` at line 1 column 1932", "fold"},
		// vLLM (nashsu/llm_wiki#45).
		{"vllm: System message must be at the beginning", `{"error":{"message":"System message must be at the beginning.","type":"BadRequestError","param":null,"code":400}}`, "fold"},
		// OpenAI-compatible (openai/openai-python#2047, BerriAI/litellm#5671).
		{"openai: does not support 'system'", `{"error":{"message":"Unsupported value: 'messages[0].role' does not support 'system' with this model.","type":"invalid_request_error","param":"messages[0].role","code":"unsupported_value"}}`, "fold"},
		// A Go router (router-for-me/CLIProxyAPI#4092).
		{"router: System messages are not allowed", `{"detail":"System messages are not allowed"}`, "fold"},
		// LiteLLM in front of Anthropic (anthropics/claude-code#27065).
		{"litellm: custom.defer_loading wrapped", `{"error":{"message":"{\"message\":\"tools.21.custom.defer_loading: Extra inputs are not permitted\"}. Received Model Group=claude-sonnet-4-6\nAvailable Model Group Fallbacks=None","type":"None","param":"None","code":"400"}}`, "emulate"},
		// Bedrock through a gateway (anthropics/claude-code#82549).
		{"bedrock: defer_loading extra input", `{"message":"tools.11.custom.defer_loading: Extra inputs are not permitted"}`, "emulate"},
		// An OpenAI-style upstream behind a router (router-for-me/CLIProxyAPI#1871).
		{"openai: Unknown parameter tools.defer_loading", `{"error":{"message":"Unknown parameter: 'tools.defer_loading'.","type":"invalid_request_error","param":"tools.defer_loading","code":"unknown_parameter"}}`, "emulate"},
		// A router for non-Anthropic models (anthropics/claude-code#89211).
		{"router: Deferred custom tools", `{"type":"error","error":{"type":"invalid_request_error","message":"Deferred custom tools are only supported on Anthropic models and on Anthropic-compatible provider endpoints that implement deferral. Other endpoints cannot call tools omitted from tools[]. Received stealth/ox-alpha."}}`, "emulate"},
		// A router that cached a deferred tool (decolua/9router#3567):
		// without tool search the deferred tool is sent plain, which fixes it.
		{"anthropic: defer_loading with cache_control", `{"type":"error","error":{"type":"invalid_request_error","message":"Tool 'mcp__pmb__record_batch' cannot both defer_loading=true cache_control set. Tools defer_loading cannot use prompt caching."}}`, "emulate"},
		// A beta refused by its name in Anthropic's words (the API's
		// "Unexpected value(s)" for a header it does not know).
		{"anthropic: Unexpected value(s) beta", `{"type":"error","error":{"type":"invalid_request_error","message":"Unexpected value(s) ` + "`mid-conversation-tool-changes-2026-07-01`" + ` for the ` + "`anthropic-beta`" + ` header."}}`, "fold"},
		{"a beta named without its date", `{"error":{"message":"advanced-tool-use is not available for this model"}}`, "emulate"},
		{"tool_reference in camel case", `{"message":"Unknown content type toolReference in messages[3]"}`, "emulate"},
		// Bedrock behind LiteLLM and directly: the beta is not named
		// (anthropics/claude-code#30926, #49370).
		{"bedrock: invalid beta flag, litellm", `{"error":{"message":"{\"message\":\"invalid beta flag\"}. Received Model Group=us.anthropic.claude-opus-4-6-v1\nAvailable Model Group Fallbacks=None","type":"None","param":"None","code":"400"}}`, "nothing"},
		{"bedrock: invalid beta flag", `{"type":"error","error":{"type":"invalid_request_error","message":"invalid beta flag"}}`, "nothing"},
		// Bailian and ModelScope (diegosouzapw/OmniRoute#1445, modelscope/modelscope#1442).
		{"bailian: Request body format invalid", `Request body format invalid`, "nothing"},
		{"modelscope: message must be json_object", `{"type":"error","error":{"type":"invalid_request_error","message":"message must be json_object."},"request_id":"63d6dfd8"}`, "nothing"},
		// A field this request does not have (BerriAI/litellm#13825).
		{"bedrock: guardrails extra input", `{"error":{"message":"litellm.BadRequestError: BedrockException - {\"message\":\"The model returned the following errors: guardrails: Extra inputs are not permitted\"}","type":null,"param":null,"code":"400"}}`, "nothing"},
		// The client's own mistakes: nothing to drop.
		// OpenRouter relaying a provider (farion1231/cc-switch#464).
		{"openrouter: provider raw error", `{"error":{"message":"Provider returned error","code":400,"metadata":{"raw":"{\"error\":{\"code\":\"400\",\"message\":\"Param Incorrect\",\"param\":\"messages[2] assistant content must contain at least one part\",\"type\":\"\"}}","provider_name":"Xiaomi"}}}`, "client"},
		// OpenRouter relaying Bedrock (charmbracelet/crush#910).
		{"openrouter: text should be a string", `{"message":"Provider returned error","code":400,"metadata":{"raw":"{\"message\":\"messages.1.content.0.text.text: Input should be a valid string\"}","provider_name":"Amazon Bedrock"}}`, "client"},
		// Anthropic (BloomLabsInc/genkit-plugins#149, NyarchLinux/NyarchAssistant#157).
		{"anthropic: roles must alternate", `{"type":"error","error":{"type":"invalid_request_error","message":"roles must alternate between \"user\" and \"assistant\", but found multiple \"user\" roles in a row"}}`, "client"},
		{"anthropic: Unexpected role \"tool\"", `{"type":"error","error":{"type":"invalid_request_error","message":"messages: Unexpected role \"tool\". Allowed roles are \"user\" or \"assistant\". For instructions on how to use tools, see https://platform.claude.com/docs/en/agents-and-tools/tool-use/overview."}}`, "client"},
		{"anthropic: max_tokens too large", `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: 32000 > 16000, which is the maximum allowed number of output tokens for claude-opus-5"}}`, "client"},
		{"anthropic: thinking budget", `{"type":"error","error":{"type":"invalid_request_error","message":"thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"}}`, "client"},
		// The API's own words for a reference to an absent tool: the
		// conversation's fault, never a reason to go lower.
		{"anthropic: tool reference not found", `{"type":"error","error":{"type":"invalid_request_error","message":"Tool reference 'mcp__memory__create_entities' not found in available tools"}}`, "client"},
		// Not an error body at all.
		{"html", `<html><body><h1>400 Bad Request</h1></body></html>`, "nothing"},
		{"empty", ``, "nothing"},
		{"truncated json", `{"error":{"message":"unexpected role 'sys`, "nothing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := readRefusal([]byte(tt.body), []byte(refusalRequest), refusalHeader())
			got := map[drop]string{keep: "client", dropInline: "inline", dropFold: "fold", dropEmulate: "emulate"}[r.named.drop]
			if !r.any {
				got = "nothing"
			}
			if got != tt.want {
				t.Fatalf("read as %q (named %v), want %q; text %q", got, r.named, tt.want, errorText([]byte(tt.body)))
			}
		})
	}
}

// TestReadRefusalOnlyWhatWasSent: a name counts only when the request used
// it. The same text refuses the system role of a request that has system
// messages, and names nothing of one that has none.
func TestReadRefusalOnlyWhatWasSent(t *testing.T) {
	t.Parallel()
	plain := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	tests := []struct {
		name, sent, body string
		header           http.Header
		wantAny          bool
		want             drop
	}{
		{"system role, sent", refusalRequest, `{"error":{"message":"unexpected role 'system'"}}`, nil, true, dropFold},
		{"system message by its place", refusalRequest, `{"error":{"message":"messages.0.role: Input should be 'user' or 'assistant'"}}`, nil, true, dropFold},
		{"user message by its place", refusalRequest, `{"error":{"message":"messages.1.content.0.text.text: Input should be a valid string"}}`, nil, true, keep},
		{"system role, not sent", plain, `{"error":{"message":"unexpected role 'system'"}}`, nil, false, keep},
		{"top-level system field is no role", `{"model":"m","system":"x","messages":[{"role":"system","content":"x"}]}`, `{"error":{"message":"system: Input should be a valid list"}}`, nil, true, keep},
		{"tool_definition, sent", `{"model":"m","messages":[{"role":"system","content":[{"type":"tool_addition","tool":{"type":"tool_definition","definition":{"name":"a"}}}]}]}`, `{"message":"Input tag 'tool_definition' found using 'type' does not match any of the expected tags"}`, nil, true, dropInline},
		{"inline beta, header", plain, `{"message":"Unexpected value(s) ` + "`inline-tools-2026-09-15`" + ` for the anthropic-beta header"}`, http.Header{"Anthropic-Beta": {"inline-tools-2026-09-15"}}, true, dropInline},
		{"beta in the body", `{"model":"m","anthropic_beta":["tool-search-tool-2025-10-19"],"messages":[]}`, `{"message":"tool-search-tool-2025-10-19 is not a valid beta"}`, nil, true, dropEmulate},
		{"server search tool", `{"model":"m","tools":[{"type":"tool_search_tool_bm25_20251119","name":"tool_search_tool_bm25"}],"messages":[]}`, `{"message":"tools.0: Input tag 'tool_search_tool_bm25_20251119' found using 'type' does not match any of the expected tags"}`, nil, true, dropEmulate},
		{"mcp toolset default_config", `{"model":"m","tools":[{"type":"mcp_toolset","mcp_server_name":"gh","default_config":{"defer_loading":true}}],"messages":[]}`, `{"message":"tools.0.default_config.defer_loading: Extra inputs are not permitted"}`, nil, true, dropEmulate},
		{"a schema's keys are the client's", `{"model":"m","tools":[{"name":"t","input_schema":{"type":"object","properties":{"tool_reference":{"type":"string"}}}}],"messages":[]}`, `{"message":"tool_reference is not allowed"}`, nil, false, keep},
		{"not a JSON request", `not json`, `{"message":"unexpected role 'system'"}`, nil, false, keep},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := tt.header
			if h == nil {
				h = http.Header{}
			}
			r := readRefusal([]byte(tt.body), []byte(tt.sent), h)
			if r.any != tt.wantAny || r.named.drop != tt.want {
				t.Fatalf("any %v named %v (drop %d), want any %v drop %d", r.any, r.named, r.named.drop, tt.wantAny, tt.want)
			}
		})
	}
}

// TestWords: names compare whatever the quoting, case and punctuation.
func TestWords(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"tool_reference", "tool reference"},
		{"`tool-reference`", "tool reference"},
		{"'toolReference'", "tool reference"},
		{"\"Tool Reference\"", "tool reference"},
		{"messages[1].role: unknown variant `system`", "messages 1 role unknown variant system"},
		{"mid-conversation-tool-changes-2026-07-01", "mid conversation tool changes 2026 07 01"},
		{"Ünïcödé ROLE", "ünïcödé role"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := strings.Join(words(tt.in, 100), " "); got != tt.want {
			t.Errorf("words(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestErrorTextBounded: deep, wide or self-nesting bodies are read within
// the bounds.
func TestErrorTextBounded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
	}{
		{"deep arrays", strings.Repeat("[", 5000) + `"role system"` + strings.Repeat("]", 5000)},
		{"long string", `{"message":"` + strings.Repeat("system role ", 200000) + `"}`},
		{"nested json strings", `{"raw":"{\"raw\":\"{\\\"raw\\\":\\\"{\\\\\\\"m\\\\\\\":1}\\\"}\"}"}`},
		{"invalid utf-8", "{\"message\":\"\xff\xfe role system\"}"},
		{"many words", strings.Repeat("a ", 100000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if text := errorText([]byte(tt.body)); len(text) > maxErrorText+1 {
				t.Fatalf("text of %d bytes", len(text))
			}
			r := readRefusal([]byte(tt.body), []byte(refusalRequest), refusalHeader())
			if len(r.message) > 300+len("…") {
				t.Fatalf("message of %d bytes", len(r.message))
			}
		})
	}
}

// FuzzReadRefusal: no upstream body makes the reader panic, and what it
// reads is bounded. The seeds run with go test.
func FuzzReadRefusal(f *testing.F) {
	for _, s := range []string{
		`{"type":"error","error":{"type":"invalid_request_error","message":"messages: unexpected role 'system'"}}`,
		`{"detail":[{"type":"literal_error","loc":["body","messages",1,"role"],"msg":"Input should be 'user' or 'assistant'","input":"system"}]}`,
		`{"error":{"message":"{\"message\":\"tools.21.custom.defer_loading: Extra inputs are not permitted\"}. Received","code":"400"}}`,
		`{"error":{"message":"Provider returned error","metadata":{"raw":"{\"error\":{\"message\":\"Param Incorrect\"}}"}}}`,
		"unknown variant `system`, expected `user` or `assistant`",
		`[[[[{"raw":"[{\"raw\":\"[1,2,\"}]"}]]]]`,
		"",
		"\xff",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := readRefusal(body, []byte(refusalRequest), refusalHeader())
		if len(r.message) > 300+len("…") {
			t.Fatalf("message of %d bytes", len(r.message))
		}
		if r.named.drop > dropEmulate || (r.named.drop != keep && !r.any) {
			t.Fatalf("inconsistent refusal %+v", r)
		}
		if _, ok := r.below(level{emulate: true}); ok {
			t.Fatal("a level below emulate")
		}
	})
}
