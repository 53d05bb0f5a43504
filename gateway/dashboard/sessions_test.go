package dashboard_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/dashboard"
)

// TestSessionsShown connects real clients to a real gateway in each way a
// client comes (a session over stdio or HTTP, a 2026-07-28 connection over
// stdio, 2026-07-28 requests over HTTP), searches, calls, ends the
// connection, and reads what the dashboard shows: the client's name and
// version, a session closed when its connection ends (or when it sat idle
// over HTTP), and what it saved, by the gateway or by a client that
// defers tools behind its own tool search.
func TestSessionsShown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		exposure string
		// how: "stdio", "http", or "idle" (over HTTP, never closed by the
		// client: the idle timeout ends it).
		how, client, protocol string
		// wantClient is the name (and version) shown for the client.
		wantClient string
		// wantShared: a shared server (2026-07-28 over HTTP), which has
		// no session to close.
		wantShared   bool
		wantExposure string
		wantDeferred string
	}{
		{"a 2025-11-25 session over stdio ends with its connection", "search", "stdio", "stdio-client", "2025-11-25",
			"stdio-client 1.0", false, "search", "gateway"},
		{"a 2026-07-28 connection over stdio ends with its connection", "search", "stdio", "modern-stdio", "2026-07-28",
			"modern-stdio 1.0", false, "search", "gateway"},
		{"Claude Code over stdio in full: its own tool search saves", "auto", "stdio", "claude-code", "2026-07-28",
			"claude-code 1.0", false, "full", "client"},
		{"Claude Code over stdio in full by configuration: its own tool search saves", "full", "stdio", "claude-code", "2026-07-28",
			"claude-code 1.0", false, "full", "client"},
		{"a client in full that defers nothing saves nothing", "full", "stdio", "plain-client", "2025-11-25",
			"plain-client 1.0", false, "full", ""},
		{"a session over HTTP ends when idle", "search", "idle", "idle-client", "2025-11-25",
			"idle-client 1.0", false, "search", "gateway"},
		{"2026-07-28 requests over HTTP name their client", "auto", "http", "claude-code", "2026-07-28",
			"claude-code 1.0", true, "full", "client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := rigOptions{exposure: tc.exposure}
			if tc.how == "idle" {
				o.idle = "1s"
			}
			r := newRig(t, o)
			cs := r.stdio
			if tc.how != "stdio" {
				cs = func(t *testing.T, name, protocol string) *mcp.ClientSession {
					return r.clientAs(t, name, "1.0", protocol)
				}
			}
			s := cs(t, tc.client, tc.protocol)
			if tc.wantExposure == "full" {
				call(t, s, listed(t, s, "keep_note"), map[string]any{"text": "called by name"})
			} else {
				found := search(t, s, "keep a short note in the notebook")
				i := slices.IndexFunc(found, func(n string) bool { return n == "keep_note" || n == "hostile__keep_note" })
				if i < 0 {
					t.Fatalf("the search found %v", found)
				}
				call(t, s, "call_tool", map[string]any{"name": found[i], "arguments": map[string]any{"text": "found"}})
			}
			if tc.how != "idle" {
				_ = s.Close()
			}
			var sess dashboard.Session
			var st dashboard.State
			eventually(t, "the session shows, closed (or, shared, with its client)", 15*time.Second, func() bool {
				st = r.state(t)
				if len(st.Sessions) != 1 {
					return false
				}
				sess = st.Sessions[0]
				if tc.wantShared {
					return len(sess.Clients) == 1 && sess.Calls == 1
				}
				return !sess.Open && sess.Closed != nil
			})
			client := sess.Client
			if tc.wantShared {
				if !sess.Shared || !sess.Open {
					t.Errorf("session %+v: want a shared server, open", sess)
				}
				client = sess.Clients[0].Client
				if sess.Clients[0].Protocol != tc.protocol || sess.Clients[0].Requests < 2 {
					t.Errorf("client seen %+v: want MCP %s and its requests counted", sess.Clients[0], tc.protocol)
				}
			}
			if client != tc.wantClient {
				t.Errorf("client %q, want %q", client, tc.wantClient)
			}
			if sess.Exposure != tc.wantExposure || sess.DeferredBy != tc.wantDeferred {
				t.Errorf("exposure %q deferred by %q, want %q by %q", sess.Exposure, sess.DeferredBy, tc.wantExposure, tc.wantDeferred)
			}
			switch {
			case sess.FullTokens <= 0:
				t.Errorf("full list %d tokens: want it counted", sess.FullTokens)
			case tc.wantDeferred == "" && sess.ModelTokens != sess.FullTokens:
				t.Errorf("the model of a client that defers nothing sees %d of %d tokens", sess.ModelTokens, sess.FullTokens)
			case tc.wantDeferred != "" && (sess.ModelTokens <= 0 || sess.ModelTokens >= sess.FullTokens):
				t.Errorf("the model sees %d of %d tokens: want less, and not nothing", sess.ModelTokens, sess.FullTokens)
			}
			if tc.wantDeferred == "client" && (st.Economy.ByClient <= 0 || sess.SentTokens != sess.FullTokens) {
				t.Errorf("economy %+v, session %+v: want the full list sent and the client's saving counted", st.Economy, sess)
			}
			if len(st.Calls)+len(st.Searches) == 0 {
				t.Fatal("the dashboard shows no call and no search")
			}
			if got := append(callClients(st.Calls), searchClients(st.Searches)...); slices.ContainsFunc(got, func(c string) bool { return c != tc.wantClient }) {
				t.Errorf("searches and calls name clients %q, want %q", got, tc.wantClient)
			}
		})
	}
}

func callClients(cs []dashboard.Call) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Client)
	}
	return out
}

func searchClients(ss []dashboard.Search) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Client)
	}
	return out
}

// listed returns the name the session lists for the tool whose name
// ends in suffix.
func listed(t *testing.T, cs *mcp.ClientSession, suffix string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		if strings.HasSuffix(tool.Name, suffix) {
			return tool.Name
		}
		names = append(names, tool.Name)
	}
	t.Fatalf("no tool ending in %s is listed: %v", suffix, names)
	return ""
}
