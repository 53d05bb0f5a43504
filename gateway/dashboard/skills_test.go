package dashboard_test

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/core/skills"
	"github.com/toolsearch/toolsearch/gateway"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/gateway/dashboard"
)

type skillsParams struct {
	mcp.ParamsBase
	Cursor string `json:"cursor,omitempty"`
	URI    string `json:"uri,omitempty"`
}

type skillsResult struct {
	mcp.ResultBase
	ResultType string            `json:"resultType"`
	Skills     []json.RawMessage `json:"skills,omitempty"`
	Skill      json.RawMessage   `json:"skill,omitempty"`
	TTLMs      int               `json:"ttlMs"`
	CacheScope string            `json:"cacheScope"`
}

// skillFiles are the files the skills server serves, by their URIs; the
// liar's SKILL.md is served other than its manifest says.
var skillFiles = map[string]string{
	"skill://pdf-forms/SKILL.md":             "---\nname: pdf-forms\ndescription: Fill in PDF forms field by field\n---\n\nSee references/FIELDS.md.\n",
	"skill://pdf-forms/references/FIELDS.md": "# Fields\n\nOne per line.\n",
	"skill://liar/SKILL.md":                  "---\nname: liar\ndescription: Says one thing, serves another\n---\n",
}

// skillEntry is the entry of the skill at root, its manifest from
// skillFiles.
func skillEntry(root, desc string) json.RawMessage {
	var res []map[string]any
	for uri, c := range skillFiles {
		if strings.HasPrefix(uri, "skill://"+root+"/") {
			res = append(res, map[string]any{"uri": uri, "digest": skills.Digest([]byte(c)), "size": len(c)})
		}
	}
	b, _ := json.Marshal(map[string]any{"uri": "skill://" + root + "/SKILL.md",
		"frontmatter": map[string]string{"name": root, "description": desc}, "resources": res})
	return b
}

// serveSkillsRole is a stdio MCP server declaring the skills extension:
// pdf-forms (two files) and liar, whose SKILL.md fails verification.
func serveSkillsRole() int {
	entries := map[string]json.RawMessage{
		"skill://pdf-forms/SKILL.md": skillEntry("pdf-forms", "Fill in PDF forms field by field"),
		"skill://liar/SKILL.md":      skillEntry("liar", "Says one thing, serves another"),
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "skills", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Resources: &mcp.ResourceCapabilities{},
			Extensions: map[string]any{skills.ExtensionID: map[string]any{}}}})
	s.AddTool(&mcp.Tool{Name: "noop", Description: "Do nothing.", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	for uri, c := range skillFiles {
		if uri == "skill://liar/SKILL.md" {
			c = strings.ToUpper(c) // same size, other bytes
		}
		s.AddResource(&mcp.Resource{URI: uri, Name: uri}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: c}}}, nil
		})
	}
	_ = mcp.AddReceivingCustomMethod(s, "skills/list", func(context.Context, *mcp.ServerSession, *skillsParams) (*skillsResult, error) {
		return &skillsResult{ResultType: "complete", CacheScope: "public",
			Skills: []json.RawMessage{entries["skill://liar/SKILL.md"], entries["skill://pdf-forms/SKILL.md"]}}, nil
	})
	_ = mcp.AddReceivingCustomMethod(s, "skills/get", func(_ context.Context, _ *mcp.ServerSession, p *skillsParams) (*skillsResult, error) {
		return &skillsResult{ResultType: "complete", CacheScope: "public", Skill: entries[p.URI]}, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		return 1
	}
	return 0
}

// metricValues reads the unlabelled and labelled samples of /metrics.
func metricValues(t *testing.T, base string) map[string]float64 {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// TestSkillsReported: /metrics and /ui/api/state report the skills as
// they report tools: how many clients see, what a first skills/list costs,
// the bytes of their files, and the skills fetched and files read (and
// refused) by a client.
func TestSkillsReported(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	b, _ := json.Marshal(map[string]any{
		"mcpServers": map[string]any{"docs": map[string]any{"command": exe, "env": map[string]string{roleEnv: "skills"}}},
		"toolsearch": map[string]any{"stateDir": filepath.Join(dir, "state"), "exposure": "search"}})
	path := filepath.Join(dir, "toolsearch.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	d := dashboard.New(dashboard.FromConfig(cfg.Gateway.Dashboard))
	g, err := gateway.New(cfg, gateway.Options{Feed: d, UI: d, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.Start(ctx)
	srv := httptest.NewServer(g.Handler(""))
	t.Cleanup(func() { d.Close(); srv.Close(); cancel(); g.Close() })
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	if err := g.WaitSettled(wctx); err != nil {
		t.Fatal(err)
	}

	refs := g.Skills()
	if len(refs) != 2 {
		t.Fatalf("the gateway sees %d skills, want 2", len(refs))
	}
	var bytes int64
	for _, c := range skillFiles {
		bytes += int64(len(c))
	}
	m := metricValues(t, srv.URL)
	for name, want := range map[string]float64{
		"toolsearch_skills":             2,
		"toolsearch_skills_list_tokens": float64(skills.FirstListTokens(refs)),
		"toolsearch_skills_file_bytes":  float64(bytes),
	} {
		if m[name] != want || want == 0 {
			t.Errorf("%s = %v, want %v", name, m[name], want)
		}
	}

	cl := mcp.NewClient(&mcp.Implementation{Name: "skills-client", Version: "1"}, nil)
	_ = mcp.AddSendingCustomMethod[*skillsParams, *skillsResult](cl, "skills/get")
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := mcp.CallCustomMethod[*skillsParams, *skillsResult](ctx, cs, "skills/get", &skillsParams{URI: "skill://docs/pdf-forms/SKILL.md"}); err != nil {
		t.Fatalf("skills/get: %v", err)
	}
	for _, u := range []string{"skill://docs/pdf-forms/SKILL.md", "skill://docs/pdf-forms/references/FIELDS.md"} {
		if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: u}); err != nil {
			t.Fatalf("read %s: %v", u, err)
		}
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "skill://docs/liar/SKILL.md"}); err == nil || !strings.Contains(err.Error(), "digest mismatch") {
		t.Fatalf("the liar's SKILL.md: %v", err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "fill in a pdf form", "kind": "skills"}})
	if err != nil || res.IsError {
		t.Fatalf("search_tools: %v %+v", err, res)
	}

	m = metricValues(t, srv.URL)
	for name, want := range map[string]float64{
		`toolsearch_skills_fetched_total{outcome="ok"}`:         1,
		`toolsearch_skill_files_read_total{outcome="verified"}`: 2,
		`toolsearch_skill_files_read_total{outcome="refused"}`:  1,
		`toolsearch_search_skill_hits_total`:                    1,
	} {
		if m[name] != want {
			t.Errorf("%s = %v, want %v", name, m[name], want)
		}
	}

	var st dashboard.State
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(srv.URL + "/ui/api/state")
		if err != nil {
			t.Fatal(err)
		}
		st = dashboard.State{}
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if st.Skills != nil && st.Skills.FilesRead == 2 && st.Skills.Refused == 1 && st.Skills.Fetched == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/ui/api/state skills: %+v", st.Skills)
		}
		time.Sleep(50 * time.Millisecond)
	}
	k := st.Skills
	if k.Skills != 2 || k.ListTokens != int(m["toolsearch_skills_list_tokens"]) || k.FileBytes != bytes || k.Tokens < k.ListTokens-2 ||
		len(k.Servers) != 1 || k.Servers[0].Server != "docs" || k.Servers[0].Skills != 2 || k.Servers[0].FilesRead != 2 {
		t.Errorf("/ui/api/state skills %+v (servers %+v)", k, k.Servers)
	}
	if len(st.Servers) != 1 || len(st.Servers[0].SkillList) != 2 || st.Servers[0].SkillList[1].URI != "skill://docs/pdf-forms/SKILL.md" {
		t.Errorf("the server's skill list: %+v", st.Servers)
	}
}
