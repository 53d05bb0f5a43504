package gateway

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/clientera"
)

// FuzzParseSavedSession: a saved session state, whatever its bytes, is
// either refused with an error or one that can be served: initialized
// params present, a session-era version, the endpoint's exposure, a
// known mode and a bounded discovered set. It never panics.
func FuzzParseSavedSession(f *testing.F) {
	good, _ := json.Marshal(savedSession{Version: savedSessionVersion, Endpoint: "dynamic", Mode: "dynamic",
		State: mcp.ServerSessionState{InitializeParams: &mcp.InitializeParams{ProtocolVersion: era2025,
			ClientInfo: &mcp.Implementation{Name: "c", Version: "1"}}, NegotiatedProtocolVersion: era2025},
		Loaded: []string{"alpha/alpha_weather"}, Subscriptions: []string{"cache://alpha/doc"}})
	for _, seed := range []string{string(good), `{}`, `null`, `[]`, `{"v":1,"state":{"initializeParams":null}}`,
		`{"v":1,"endpoint":"dynamic","mode":"dynamic","state":{"initializeParams":{},"negotiatedProtocolVersion":"2026-07-28"}}`,
		`{"v":1,"endpoint":"dynamic","mode":"root","state":{"initializeParams":{},"negotiatedProtocolVersion":"2025-11-25"}}`, "\x00"} {
		f.Add([]byte(seed), "dynamic")
	}
	f.Fuzz(func(t *testing.T, data []byte, mode string) {
		saved, err := parseSavedSession(data, mode)
		if err != nil {
			if saved != nil {
				t.Fatal("a state and an error")
			}
			return
		}
		if saved.State.InitializeParams == nil || saved.Endpoint != mode || len(saved.Loaded) > maxDynamicTools ||
			clientera.Modern(saved.State.NegotiatedProtocolVersion) {
			t.Fatalf("accepted a state that cannot be served: %+v", saved)
		}
	})
}
