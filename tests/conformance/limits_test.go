package conformance

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestClientLimitHolds keeps clientLimits honest: the Go SDK's own client,
// connected straight to everything-server (stateful), still cannot get the
// result of test_reconnection, whose stream ends with no event id. When an
// SDK release fixes that, this test fails: drop the entry from clientLimits
// and this test.
func TestClientLimitHolds(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts everything-server")
	}
	everything := findEverythingServer(t)
	addr := freeAddr(t)
	startProcess(t, "everything-server", exec.Command(everything, "-http", addr, "-stateless=false"))
	waitTCP(t, addr)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "limit-check", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", MaxRetries: 2}, nil)
	if err != nil {
		t.Fatalf("connecting to everything-server: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_reconnection", Arguments: map[string]any{}})
	if err == nil {
		t.Fatalf("test_reconnection now answers the SDK client (%v): remove %q from clientLimits", res.Content, "server-sse-polling/server-sse-retry-field")
	}
	if !strings.Contains(err.Error(), "terminated without response") {
		t.Fatalf("test_reconnection failed otherwise than clientLimits says: %v", err)
	}
}
