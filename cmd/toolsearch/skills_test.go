package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/core/skills"
)

// roleSkills are the skills the "skills" role serves: path, description
// and the SKILL.md's body.
var roleSkills = []struct{ path, desc string }{
	{"acme/billing/refunds", "Process customer refund requests according to the billing policy"},
	{"pdf-forms", "Fill in PDF forms field by field and flatten them for signing"},
	{"git-workflow", "Follow the team's Git conventions for branches, commits and rebasing"},
}

// roleSkillMD is the SKILL.md of a role skill.
func roleSkillMD(path, desc string) string {
	return "---\nname: " + path[strings.LastIndexByte(path, '/')+1:] + "\ndescription: " + desc + "\n---\n\n# " + path + "\n"
}

type roleSkillsParams struct {
	mcp.ParamsBase
	Cursor string `json:"cursor,omitempty"`
}

type roleSkillsResult struct {
	mcp.ResultBase
	ResultType string            `json:"resultType"`
	Skills     []json.RawMessage `json:"skills"`
	TTLMs      int               `json:"ttlMs"`
	CacheScope string            `json:"cacheScope"`
}

// serveSkills is a stdio MCP server that declares the skills extension:
// two tools and roleSkills, listed by skills/list.
func serveSkills() int {
	s := mcp.NewServer(&mcp.Implementation{Name: "skills", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Resources: &mcp.ResourceCapabilities{},
			Extensions: map[string]any{skills.ExtensionID: map[string]any{}}}})
	for _, tool := range []struct{ name, desc string }{
		{"issue_refund", "Send a refund of a charge back to the customer's card."},
		{"list_invoices", "List the invoices of a customer."},
	} {
		s.AddTool(&mcp.Tool{Name: tool.name, Description: tool.desc, InputSchema: map[string]any{"type": "object"}},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
			})
	}
	_ = mcp.AddReceivingCustomMethod(s, "skills/list", func(ctx context.Context, _ *mcp.ServerSession, _ *roleSkillsParams) (*roleSkillsResult, error) {
		res := &roleSkillsResult{ResultType: "complete", CacheScope: "public"}
		for _, sk := range roleSkills {
			md := roleSkillMD(sk.path, sk.desc)
			uri := "skill://" + sk.path + "/SKILL.md"
			e, _ := json.Marshal(map[string]any{"uri": uri,
				"frontmatter": map[string]string{"name": sk.path[strings.LastIndexByte(sk.path, '/')+1:], "description": sk.desc},
				"resources":   []map[string]any{{"uri": uri, "digest": skills.Digest([]byte(md)), "size": len(md)}}})
			res.Skills = append(res.Skills, e)
		}
		return res, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		return 1
	}
	return 0
}

// skillsConfig writes a config of one server, docs, running the skills
// role, with its own state directory.
func skillsConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	return writeConfigJSON(t, filepath.Join(dir, "toolsearch.json"), map[string]any{
		"mcpServers": map[string]any{"docs": roleServer(t, "skills")},
		"toolsearch": map[string]any{"stateDir": filepath.Join(dir, "state")},
	})
}

// TestSearchKind: search --kind finds the config's servers' skills (from
// the server, then from its cached manifest) with the gateway's engine,
// tools only or both with -n shared between them, and refuses another
// kind; tools lists the skills with their kind, tokens and file sizes.
func TestSearchKind(t *testing.T) {
	t.Parallel()
	cfg := skillsConfig(t)
	search := func(args ...string) (int, resultJSON, string) {
		t.Helper()
		code, out, errs := runCLI(t, append([]string{"search", "-c", cfg, "--timeout", "2m", "--json"}, args...)...)
		var res resultJSON
		if code != exitUsage {
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("search %v: stdout is not JSON (%v):\n%s\nstderr:\n%s", args, err, out, errs)
			}
		}
		return code, res, errs
	}
	refunds := "skill://docs/acme/billing/refunds/SKILL.md"
	code, res, errs := search("--kind", "skills", "give a customer their money back under the billing policy")
	if code != exitOK || len(res.Skills) == 0 || res.Skills[0].URI != refunds || len(res.Hits) != 0 {
		t.Fatalf("--kind skills: exit %d, skills %+v, tools %+v\n%s", code, res.Skills, res.Hits, errs)
	}
	if !strings.Contains(errs, "docs: starting") {
		t.Errorf("the first run did not start the server:\n%s", errs)
	}
	// The second run answers from the cached manifest, skills included.
	code, res, errs = search("--kind", "skills", "pdf form fields")
	if code != exitOK || len(res.Skills) == 0 || res.Skills[0].URI != "skill://docs/pdf-forms/SKILL.md" || res.Skills[0].Server != "docs" {
		t.Errorf("--kind skills from the cache: exit %d, %+v\n%s", code, res.Skills, errs)
	}
	if !strings.Contains(errs, "from the cache") {
		t.Errorf("the second run did not use the cache:\n%s", errs)
	}
	code, res, errs = search("--kind", "tools", "refund customer")
	if code != exitOK || len(res.Skills) != 0 || len(res.Hits) == 0 || res.Hits[0].ID != "docs/issue_refund" {
		t.Errorf("--kind tools: exit %d, tools %+v, skills %+v\n%s", code, res.Hits, res.Skills, errs)
	}
	// Both, one -n: the query finds a tool and a skill; with -n 1 only
	// the best tool, with -n 2 a tool then a skill.
	for _, tc := range []struct {
		n             string
		tools, skills int
	}{{"1", 1, 0}, {"2", 1, 1}} {
		code, res, errs = search("--kind", "both", "-n", tc.n, "refund")
		if code != exitOK || len(res.Hits) != tc.tools || len(res.Skills) != tc.skills {
			t.Errorf("--kind both -n %s: exit %d, %d tools and %d skills, want %d and %d\n%s", tc.n, code, len(res.Hits), len(res.Skills), tc.tools, tc.skills, errs)
		}
	}
	if code, _, errs := search("--kind", "prompts", "refund"); code != exitUsage || !strings.Contains(errs, "--kind is \"prompts\"") {
		t.Errorf("--kind prompts: exit %d: %s", code, errs)
	}
	code, out, errs := runCLI(t, "search", "-c", cfg, "--kind", "skills", "git branches")
	if code != exitOK || !strings.Contains(out, "1. skill://docs/git-workflow/SKILL.md (skill of docs)") {
		t.Errorf("text output: exit %d\n%s%s", code, out, errs)
	}

	// tools: the skills with their kind, sizes and the first list's cost.
	code, out, errs = runCLI(t, "tools", "-c", cfg, "--json")
	var rep toolsReport
	if err := json.Unmarshal([]byte(out), &rep); code != exitOK || err != nil {
		t.Fatalf("tools --json: exit %d, %v\n%s%s", code, err, out, errs)
	}
	if rep.Skills == nil || rep.Skills.Skills != len(roleSkills) || len(rep.Skills.List) != len(roleSkills) {
		t.Fatalf("tools --json: skills %+v", rep.Skills)
	}
	var bytes int64
	tokens := 0
	for _, sk := range roleSkills {
		bytes += int64(len(roleSkillMD(sk.path, sk.desc)))
	}
	for _, r := range rep.Skills.List {
		if r.Kind != "skill" || r.Server != "docs" || r.Tokens <= 0 || r.Files != 1 {
			t.Errorf("skill row %+v", r)
		}
		tokens += r.Tokens
	}
	if rep.Skills.FileBytes != bytes || rep.Skills.Servers[0].FileBytes != bytes {
		t.Errorf("file bytes %d (server %d), want %d", rep.Skills.FileBytes, rep.Skills.Servers[0].FileBytes, bytes)
	}
	// The first list is one page of every entry: a little more than
	// the entries alone (the brackets and commas), never less.
	if rep.Skills.Tokens != tokens || rep.Skills.FirstListTokens < tokens || rep.Skills.FirstListTokens > tokens+len(roleSkills)+2 {
		t.Errorf("tokens %d, first list %d; the entries' sum %d", rep.Skills.Tokens, rep.Skills.FirstListTokens, tokens)
	}
	code, out, _ = runCLI(t, "tools", "-c", cfg)
	for _, want := range []string{"skill  skill://docs/pdf-forms/SKILL.md", fmt.Sprintf("a client's first skills/list costs %d tokens", rep.Skills.FirstListTokens)} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("tools lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(cfg), "state", "manifests", "docs.json")); err != nil {
		t.Errorf("no cached manifest: %v", err)
	}
}
