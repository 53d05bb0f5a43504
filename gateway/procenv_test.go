package gateway

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// envRoleEnv makes the test binary a server whose tool reports its
// environment.
const envRoleEnv = "TOOLSEARCH_ENV_ROLE"

func init() {
	if os.Getenv(envRoleEnv) != "" {
		s := mcp.NewServer(&mcp.Implementation{Name: "env", Version: "1"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "environ", Description: "Report the environment."},
			func(ctx context.Context, req *mcp.CallToolRequest, a struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(os.Environ(), "\n")}}}, nil, nil
			})
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "env:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// TestServerEnvironment: a secret in the gateway's environment does not
// reach a real spawned server; PATH, the config's env and the named
// passthrough variables do; "*" passes everything; and an npm server
// started through npx still starts with the smaller environment.
func TestServerEnvironment(t *testing.T) {
	// Not parallel: it sets the gateway's own environment.
	t.Setenv("TOOLSEARCH_TEST_SECRET_TOKEN", "s3cr3t-value-0123456789")
	t.Setenv("TOOLSEARCH_TEST_PASS_ONE", "one")
	servers := map[string]any{}
	for key, pass := range map[string][]string{"plain": nil, "named": {"TOOLSEARCH_TEST_PASS_*"}, "all": {"*"}} {
		s := map[string]any{"command": self(t), "env": map[string]string{envRoleEnv: "1", "FROM_CONFIG": "yes"}, "naming": "prefixed"}
		if pass != nil {
			s["envPassthrough"] = pass
		}
		servers[key] = s
	}
	npx := true
	if _, err := os.Stat(repoRoot(t) + "/node_modules/@modelcontextprotocol/server-memory"); err != nil {
		npx = false
		t.Log("node_modules is absent (run npm ci): the npx server is left out")
	} else {
		servers["memory"] = map[string]any{"command": "npx", "args": []string{"--no", "@modelcontextprotocol/server-memory"}, "cwd": repoRoot(t), "naming": "prefixed"}
	}
	g := startGateway(t, writeConfig(t, servers, nil))
	srv := serveHTTP(t, g.Handler("full"))
	c := connectHTTP(t, srv.URL+"/mcp/full", nil)
	for _, tc := range []struct {
		server      string
		has, hasNot []string
	}{
		{"plain", []string{"PATH=" + os.Getenv("PATH"), "FROM_CONFIG=yes"}, []string{"TOOLSEARCH_TEST_SECRET_TOKEN", "TOOLSEARCH_TEST_PASS_ONE"}},
		{"named", []string{"PATH=", "FROM_CONFIG=yes", "TOOLSEARCH_TEST_PASS_ONE=one"}, []string{"TOOLSEARCH_TEST_SECRET_TOKEN"}},
		{"all", []string{"PATH=", "FROM_CONFIG=yes", "TOOLSEARCH_TEST_PASS_ONE=one", "TOOLSEARCH_TEST_SECRET_TOKEN=s3cr3t-value-0123456789"}, nil},
	} {
		waitState(t, g, tc.server, 20*time.Second, StateReady)
		text, isErr := c.call(t, tc.server+"__environ", map[string]any{})
		if isErr {
			t.Fatalf("%s: %s", tc.server, text)
		}
		env := strings.Split(text, "\n")
		for _, want := range tc.has {
			if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, want) }) {
				t.Errorf("%s: no %s in its environment", tc.server, want)
			}
		}
		for _, bad := range tc.hasNot {
			if strings.Contains(text, bad) {
				t.Errorf("%s: sees %s", tc.server, bad)
			}
		}
	}
	if npx {
		if st := waitState(t, g, "memory", 60*time.Second, StateReady, StateFailed); st.State != StateReady || st.Tools == 0 {
			t.Errorf("the npx server with the smaller environment: %+v", st)
		}
	}
}
