package clients

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// codexListed is one server as `codex mcp list --json` describes it: how
// Codex itself read its config.toml.
type codexListed struct {
	Name      string `json:"name"`
	Enabled   bool   `json:"enabled"`
	Transport struct {
		Type              string            `json:"type"`
		Command           string            `json:"command"`
		Args              []string          `json:"args"`
		Env               map[string]string `json:"env"`
		EnvVars           []string          `json:"env_vars"`
		Cwd               string            `json:"cwd"`
		URL               string            `json:"url"`
		BearerTokenEnvVar string            `json:"bearer_token_env_var"`
		HTTPHeaders       map[string]string `json:"http_headers"`
		EnvHTTPHeaders    map[string]string `json:"env_http_headers"`
	} `json:"transport"`
	StartupTimeoutSec *float64 `json:"startup_timeout_sec"`
}

// codexList runs `codex mcp list --json` with CODEX_HOME home.
func codexList(t *testing.T, codex, home string) map[string]codexListed {
	t.Helper()
	out, errb, err := run(t, time.Minute, home, codexEnv(home), codex, "mcp", "list", "--json")
	if err != nil {
		t.Fatalf("codex mcp list: %v\n%s", err, errb)
	}
	var list []codexListed
	if err := json.Unmarshal(out, &list); err != nil {
		t.Fatalf("codex mcp list --json: %v\n%s", err, out)
	}
	m := map[string]codexListed{}
	for _, s := range list {
		m[s.Name] = s
	}
	return m
}

// codexEnv is the environment Codex's own commands run in: its home, and
// nothing of the user's.
func codexEnv(home string) []string {
	return []string{"CODEX_HOME=" + home, "HOME=" + home, "PATH=" + os.Getenv("PATH")}
}

// TestImportFromCodex: servers that Codex CLI itself wrote (codex mcp add)
// and read (codex mcp list) are imported by `toolsearch import --from
// codex` as Codex reads them, and the entry import prints for Codex is one
// Codex reads back as the gateway's command.
func TestImportFromCodex(t *testing.T) {
	t.Parallel()
	codex := codexBin(t)
	home := t.TempDir()
	// Two servers as Codex's own command writes them, and more of its
	// settings written by hand, as its documentation gives them.
	for _, args := range [][]string{
		{"mcp", "add", "mem", "--env", "MEMORY_FILE_PATH=/tmp/mem.json", "--", "npx", "-y", "@modelcontextprotocol/server-memory"},
		{"mcp", "add", "docs", "--url", "https://example.com/mcp", "--bearer-token-env-var", "DOCS_TOKEN"},
	} {
		if _, errb, err := run(t, time.Minute, home, codexEnv(home), codex, args...); err != nil {
			t.Fatalf("codex %s: %v\n%s", strings.Join(args, " "), err, errb)
		}
	}
	cfgPath := filepath.Join(home, "config.toml")
	written, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	more := `
[mcp_servers.tools]
command = "tools-mcp"
args = ["--verbose"]
cwd = "/srv"
env_vars = ["HTTPS_PROXY"]
startup_timeout_sec = 20
tool_timeout_sec = 60
enabled_tools = ["read_graph"]
disabled_tools = ["delete_entities"]

[mcp_servers.team]
url = "https://example.com/team/mcp"
http_headers = { "X-Team" = "search" }
env_http_headers = { "X-Key" = "TEAM_KEY" }
enabled = false
`
	if err := os.WriteFile(cfgPath, append(written, more...), 0o600); err != nil {
		t.Fatal(err)
	}
	listed := codexList(t, codex, home)
	if len(listed) != 4 {
		t.Fatalf("codex lists %d servers, want 4: %v", len(listed), listed)
	}

	out := filepath.Join(t.TempDir(), "toolsearch.json")
	stdout, errb, err := run(t, time.Minute, home, codexEnv(home), toolsearchBin(t), "import", "--from", "codex", "-o", out)
	if err != nil {
		t.Fatalf("toolsearch import --from codex: %v\n%s", err, errb)
	}
	if !strings.Contains(string(errb), "tool_timeout_sec left out") {
		t.Errorf("import does not say it left tool_timeout_sec out:\n%s", errb)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		MCPServers map[string]struct {
			Command        string            `json:"command"`
			Args           []string          `json:"args"`
			Env            map[string]string `json:"env"`
			EnvPassthrough []string          `json:"envPassthrough"`
			Cwd            string            `json:"cwd"`
			URL            string            `json:"url"`
			Headers        map[string]string `json:"headers"`
			Disabled       bool              `json:"disabled"`
			StartTimeout   *float64          `json:"startTimeout"`
			Allow          []string          `json:"allow"`
			Deny           []string          `json:"deny"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if len(cfg.MCPServers) != len(listed) {
		t.Errorf("imported %d servers, codex lists %d:\n%s", len(cfg.MCPServers), len(listed), raw)
	}
	for name, c := range listed {
		got, ok := cfg.MCPServers[name]
		if !ok {
			t.Errorf("server %q that codex lists was not imported", name)
			continue
		}
		tr := c.Transport
		headers := map[string]string{}
		for k, v := range tr.HTTPHeaders {
			headers[k] = v
		}
		for k, v := range tr.EnvHTTPHeaders {
			headers[k] = "${" + v + "}"
		}
		if tr.BearerTokenEnvVar != "" {
			headers["Authorization"] = "Bearer ${" + tr.BearerTokenEnvVar + "}"
		}
		for _, m := range []struct {
			what      string
			got, want any
		}{
			{"command", got.Command, tr.Command},
			{"args", orNil(got.Args), orNil(tr.Args)},
			{"env", orNilMap(got.Env), orNilMap(tr.Env)},
			{"variables passed on", orNil(got.EnvPassthrough), orNil(tr.EnvVars)},
			{"cwd", got.Cwd, tr.Cwd},
			{"url", got.URL, tr.URL},
			{"headers", orNilMap(got.Headers), orNilMap(headers)},
			{"disabled", got.Disabled, !c.Enabled},
			{"start timeout", got.StartTimeout, c.StartupTimeoutSec},
		} {
			if !reflect.DeepEqual(m.got, m.want) {
				t.Errorf("server %q: %s imported as %v, codex reads %v", name, m.what, m.got, m.want)
			}
		}
	}
	if tools := cfg.MCPServers["tools"]; strings.Join(tools.Allow, ",") != "read_graph" || strings.Join(tools.Deny, ",") != "delete_entities" {
		t.Errorf("enabled_tools and disabled_tools imported as allow %v, deny %v", tools.Allow, tools.Deny)
	}

	// Codex reads the printed entry as the gateway serving the imported
	// config.
	back := t.TempDir()
	if err := os.WriteFile(filepath.Join(back, "config.toml"), stdout, 0o600); err != nil {
		t.Fatal(err)
	}
	gw, ok := codexList(t, codex, back)["toolsearch"]
	if !ok || !strings.HasSuffix(gw.Transport.Command, "toolsearch") || strings.Join(gw.Transport.Args, " ") != "serve -c "+out {
		t.Errorf("codex reads the printed entry as %+v:\n%s", gw, stdout)
	}
}

func orNil[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

func orNilMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}
