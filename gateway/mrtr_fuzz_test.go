package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/gateway/config"
)

// FuzzRetry: whatever inputResponses and requestState a client sends, the
// gateway neither panics nor lets the retry through when it handed out no
// state: the inputResponses are decoded (as the SDK decodes them from the
// wire), checked against each kind of input request, and the state is
// refused by a gateway that bound none.
func FuzzRetry(f *testing.F) {
	f.Add(`{"name":{"action":"accept","content":{"name":"Ada"}}}`, "ask-0011")
	f.Add(`{"word":{"role":"assistant","model":"m","content":{"type":"text","text":"hi"}}}`, heldStatePrefix+"00")
	f.Add(`{"roots":{"roots":[{"uri":"file:///a"}]}}`, "")
	f.Add(`{"x":{}}`, "\x00")
	f.Add(`{"x":null}`, strings.Repeat("s", 300))
	f.Add(`[]`, "state")
	cfg, err := config.Parse("f.json", []byte(`{"mcpServers":{"m":{"command":"/nonexistent"}}}`), nil)
	if err != nil {
		f.Fatal(err)
	}
	g, err := New(cfg, Options{})
	if err != nil {
		f.Fatal(err)
	}
	tool := target{tool: &catalog.Tool{Server: "m", Name: "ask"}, server: "m", name: "ask", exposed: "m__ask"}
	//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them; sampling is forwarded for 2025-11-25 clients and servers, which still use it
	kinds := []mcp.InputRequest{&mcp.ElicitParams{}, &mcp.CreateMessageParams{}, &mcp.CreateMessageWithToolsParams{}, &mcp.ListRootsParams{}}
	f.Fuzz(func(t *testing.T, responses, state string) {
		var m mcp.InputResponseMap
		if err := json.Unmarshal([]byte(responses), &m); err != nil {
			m = nil
		}
		for _, ans := range m {
			for _, k := range kinds {
				_ = answerFits(k, ans)
			}
		}
		req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "ask", InputResponses: m, RequestState: state}}
		r, err := g.retryOf(req, tool)
		switch {
		case state != "" && err == nil:
			t.Fatalf("state %q let through with nothing bound: %+v", state, r)
		case state == "" && err != nil:
			t.Fatalf("a call without state refused: %v", err)
		}
	})
}
