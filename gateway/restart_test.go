package gateway

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRetryAfterGivingUp: a server that used up its restarts is failed,
// says when it will be tried again, and is tried again then; it comes up
// once it works.
func TestRetryAfterGivingUp(t *testing.T) {
	t.Parallel()
	flaky := roleServer(t, "flaky")
	env := flaky["env"].(map[string]string)
	env["TOOLSEARCH_TEST_COUNTER"] = filepath.Join(t.TempDir(), "starts")
	env["TOOLSEARCH_TEST_FAILS"] = "2"
	g := startGateway(t, writeConfig(t, map[string]any{"flaky": flaky},
		map[string]any{"limits": map[string]any{"maxRestarts": 0, "restartCooldown": "1s"}}))
	st := waitState(t, g, "flaky", 20*time.Second, StateFailed, StateReady)
	if st.State != StateFailed || st.RetryAt.IsZero() || !strings.Contains(st.Error, "next try at") ||
		!strings.Contains(st.Error, "start 1 fails") {
		t.Fatalf("after giving up: %+v", st)
	}
	if d := time.Until(st.RetryAt); d > time.Second || d < -10*time.Second {
		t.Errorf("retry at %v, %v from now; want within the 1s cool-down", st.RetryAt, d)
	}
	// The second give-up rests twice as long; the third start works.
	st = waitState(t, g, "flaky", 30*time.Second, StateReady)
	if !st.RetryAt.IsZero() || st.Restarts != 2 {
		t.Errorf("once ready: %+v", st)
	}
}

// TestCallRightAfterSessionEnded: a call made after the upstream session
// ended but before the gateway noticed is not lost: the server never saw
// it, so it goes to the restarted server.
func TestCallRightAfterSessionEnded(t *testing.T) {
	t.Parallel()
	g := startGateway(t, writeConfig(t, map[string]any{"echo": roleServer(t, "echo")}, nil))
	waitState(t, g, "echo", 20*time.Second, StateReady)
	srv := serveHTTP(t, g.Handler("full"))
	c := connectHTTP(t, srv.URL+"/mcp", nil)
	u := g.ups()["echo"]
	cs, _ := u.Connection()
	_ = cs.Close() // the session is over; the state still says ready
	text, isErr := c.call(t, "echo", map[string]any{"text": "again"})
	if isErr || text != "again" {
		t.Errorf("call right after the session ended = %q, %v", text, isErr)
	}
}
