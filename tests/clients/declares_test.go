package clients

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestClaudeCodeDeclares records what Claude Code tells an MCP server about
// itself, which the gateway's auto exposure is decided by: the _meta of
// its server/discover probe (MCP 2026-07-28) and, when that is refused with
// -32022, its initialize (2025-11-25). It declares roots and
// elicitation and nothing that says it defers MCP tools behind its own
// tool search, which is why the gateway knows it by its clientInfo name
// (gateway/clientmode.go). When a new version declares more, this test
// fails and the rule is to be revisited.
func TestClaudeCodeDeclares(t *testing.T) {
	t.Parallel()
	s := runClaude(t, map[string]any{"exposure": "full"}, "2025-11-25")
	var probe, init *rpcMessage
	for i := range s.sent {
		switch s.sent[i].Method {
		case "server/discover":
			probe = &s.sent[i]
		case "initialize":
			init = &s.sent[i]
		}
	}
	if probe == nil || init == nil {
		t.Fatalf("Claude Code sent no server/discover probe (%v) or no initialize (%v)", probe != nil, init != nil)
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(probe.Params, &p); err != nil {
		t.Fatal(err)
	}
	var i struct {
		ProtocolVersion string                     `json:"protocolVersion"`
		Capabilities    map[string]json.RawMessage `json:"capabilities"`
		ClientInfo      struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"clientInfo"`
	}
	if err := json.Unmarshal(init.Params, &i); err != nil {
		t.Fatal(err)
	}
	var probeVersion string
	_ = json.Unmarshal(p.Meta["io.modelcontextprotocol/protocolVersion"], &probeVersion)
	var probeCaps map[string]json.RawMessage
	_ = json.Unmarshal(p.Meta["io.modelcontextprotocol/clientCapabilities"], &probeCaps)
	var probeInfo struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	_ = json.Unmarshal(p.Meta["io.modelcontextprotocol/clientInfo"], &probeInfo)

	checks := []struct {
		what      string
		got, want any
	}{
		{"probe protocol version", probeVersion, "2026-07-28"},
		{"initialize protocol version", i.ProtocolVersion, "2025-11-25"},
		{"clientInfo name", i.ClientInfo.Name, "claude-code"},
		{"clientInfo version", i.ClientInfo.Version, claudeCodeVersion},
		{"probe clientInfo", probeInfo.Name + " " + probeInfo.Version, "claude-code " + claudeCodeVersion},
		{"initialize capabilities", sortedKeys(i.Capabilities), []string{"elicitation", "roots"}},
		{"probe capabilities", sortedKeys(probeCaps), []string{"elicitation", "roots"}},
		{"elicitation", compact(i.Capabilities["elicitation"]), `{"form":{},"url":{}}`},
		{"roots", compact(i.Capabilities["roots"]), `{"listChanged":true}`},
	}
	for _, c := range checks {
		if !equal(c.got, c.want) {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}
	for _, raw := range []json.RawMessage{init.Params, probe.Params} {
		low := strings.ToLower(string(raw))
		for _, word := range []string{"defer", "toolsearch", "tool_search", "alwaysload"} {
			if strings.Contains(low, word) {
				t.Errorf("Claude Code now declares something about tool search (%q): revisit gateway/clientmode.go\n%s", word, raw)
			}
		}
	}
	t.Logf("server/discover _meta: %s", probe.Params)
	t.Logf("initialize: %s", init.Params)
}

func sortedKeys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func compact(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func equal(a, b any) bool {
	as, aok := a.([]string)
	bs, bok := b.([]string)
	if aok && bok {
		return slices.Equal(as, bs)
	}
	return a == b
}
