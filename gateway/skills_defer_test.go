package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/skills"
)

// deferDomains and deferTasks make the fleet of TestSkillsDeferredListTokens:
// one server a domain, one skill a task, each with a description of a
// sentence or two, as skills have.
var (
	deferDomains = []string{"billing", "calendar", "crm", "docs", "email", "finance", "github", "hiring", "inventory", "jira",
		"kubernetes", "logs", "maps", "notion", "payments", "search", "slack", "storage", "support", "weather"}
	deferTasks = []struct{ name, desc string }{
		{"report", "Prepare the weekly report of %s activity: gather the figures of the last seven days, compare them with the week before, and write a summary a manager can read in two minutes, with the three changes that matter most."},
		{"audit", "Audit the %s setup for mistakes and risks: permissions granted too widely, settings left at unsafe defaults, stale entries nobody owns; list each finding with its severity and the change that fixes it."},
		{"import", "Import records into %s from a CSV or spreadsheet export: map the columns to fields, check every row before writing, skip duplicates, and report what was created, updated and rejected and why."},
		{"cleanup", "Clean up old and unused %s data: find what has not been touched for ninety days, ask before deleting anything shared, archive instead of deleting where the policy says so, and log every change."},
		{"handover", "Write the handover notes for %s when its owner changes: open work, recurring duties and their schedules, who to ask about what, credentials to rotate, and the known problems with their workarounds."},
	}
)

// deferSkillMD is the SKILL.md of one skill of the fleet, and deferGuide
// the file it refers to.
func deferSkillMD(name, desc string) string {
	d, _ := json.Marshal(desc) // a JSON string is a YAML scalar, whatever colons it holds
	return "---\nname: " + name + "\ndescription: " + string(d) + "\n---\n\n# " + name + "\n\nFollow the steps; see references/GUIDE.md.\n"
}

func deferGuide(name string) string { return "# Guide to " + name + "\n\nThe details of each step.\n" }

// deferUpstream answers as a server of domain serving five skills, each
// of two files (SKILL.md, references/GUIDE.md).
func deferUpstream(domain string) func(method string, params json.RawMessage) (string, string) {
	files := map[string]string{} // the server's own URI → content
	entries := map[string]string{}
	var order []string
	for _, task := range deferTasks {
		name := domain + "-" + task.name
		md := deferSkillMD(name, fmt.Sprintf(task.desc, domain))
		guide := deferGuide(name)
		u, g := "skill://"+name+"/SKILL.md", "skill://"+name+"/references/GUIDE.md"
		files[u], files[g] = md, guide
		fm, _ := json.Marshal(map[string]string{"name": name, "description": fmt.Sprintf(task.desc, domain)})
		entries[u] = fmt.Sprintf(`{"uri":%q,"frontmatter":%s,"resources":[{"uri":%q,"digest":%q,"size":%d},{"uri":%q,"digest":%q,"size":%d}]}`,
			u, fm, u, skills.Digest([]byte(md)), len(md), g, skills.Digest([]byte(guide)), len(guide))
		order = append(order, u)
	}
	return func(method string, params json.RawMessage) (string, string) {
		var p struct {
			URI string `json:"uri"`
		}
		_ = json.Unmarshal(params, &p)
		switch method {
		case methodSkillsList:
			list := make([]string, len(order))
			for i, u := range order {
				list[i] = entries[u]
			}
			return `{"resultType":"complete","skills":[` + strings.Join(list, ",") + `],"ttlMs":0,"cacheScope":"public"}`, ""
		case methodSkillsGet:
			if e, ok := entries[p.URI]; ok {
				return `{"resultType":"complete","skill":` + e + `,"ttlMs":0,"cacheScope":"public"}`, ""
			}
			return "", "no skill at " + p.URI
		case "resources/read":
			if c, ok := files[p.URI]; ok {
				b, _ := json.Marshal(c)
				return fmt.Sprintf(`{"contents":[{"uri":%q,"mimeType":"text/markdown","text":%s}]}`, p.URI, b), ""
			}
			return "", "no resource " + p.URI
		}
		return "", ""
	}
}

// firstSkillsList is a client's first skills/list page: its skills and
// its o200k tokens, counted over the result as sent.
func firstSkillsList(t *testing.T, cs *mcp.ClientSession) ([]*skills.Entry, int) {
	t.Helper()
	res, err := mcp.CallCustomMethod[*skillsListParams, *skillsListResult](context.Background(), cs, methodSkillsList, &skillsListParams{})
	if err != nil {
		t.Fatalf("skills/list: %v", err)
	}
	if res.NextCursor != "" {
		t.Fatalf("skills/list of %d skills has a second page", len(res.Skills))
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*skills.Entry, 0, len(res.Skills))
	for _, raw := range res.Skills {
		e, err := skills.Parse(raw)
		if err != nil {
			t.Fatalf("the gateway served an entry its own check refuses: %v", err)
		}
		out = append(out, e)
	}
	return out, catalog.CountTokens(string(b))
}

// TestSkillsDeferredListTokens: 20 servers of 5 skills each. A client in
// full exposure gets all 100 in its first skills/list; one in search
// exposure gets none (or only those of an alwaysLoad server), at a small
// fraction of the tokens, and still finds a skill with search_tools,
// fetches it with skills/get and reads its verified SKILL.md.
func TestSkillsDeferredListTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		always string // a server configured with alwaysLoad, or ""
	}{
		{"none always loaded", ""},
		{"one server always loaded", "billing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			servers := map[string]any{}
			for _, d := range deferDomains {
				entry := map[string]any{"type": "http", "url": serveHTTP(t, hostileSkills(deferUpstream(d))).URL}
				if d == tc.always {
					entry["alwaysLoad"] = true
				}
				servers[d] = entry
			}
			g := startGateway(t, writeConfig(t, servers, nil))
			for _, d := range deferDomains {
				waitState(t, g, d, 60*time.Second, StateReady)
			}
			total := len(deferDomains) * len(deferTasks)

			full, fullTok := firstSkillsList(t, skillsClient(t, g, "full"))
			if len(full) != total {
				t.Fatalf("full exposure: the first skills/list has %d skills, want %d", len(full), total)
			}
			cs := skillsClient(t, g, "search")
			deferred, deferTok := firstSkillsList(t, cs)
			wantListed := 0
			if tc.always != "" {
				wantListed = len(deferTasks)
			}
			if len(deferred) != wantListed {
				t.Fatalf("search exposure: the first skills/list has %d skills, want %d", len(deferred), wantListed)
			}
			for _, e := range deferred {
				if !strings.HasPrefix(e.URI, "skill://"+tc.always+"/") {
					t.Errorf("search exposure lists %s, of a server not always loaded", e.URI)
				}
			}
			t.Logf("first skills/list, %d servers x %d skills: full exposure %d skills, %d tokens; search exposure %d skills, %d tokens",
				len(deferDomains), len(deferTasks), len(full), fullTok, len(deferred), deferTok)
			// Far below: at most a tenth of the full figure, plus what the
			// always-loaded skills cost in full (their share of it).
			if limit := fullTok/10 + fullTok*wantListed/total; deferTok > limit {
				t.Errorf("search exposure's first skills/list costs %d tokens, want at most %d (full: %d)", deferTok, limit, fullTok)
			}

			// The search tool says how skills are found and read.
			tools, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var desc string
			for _, tl := range tools.Tools {
				if tl.Name == searchToolName {
					desc = tl.Description
				}
			}
			for _, want := range []string{"Skills are found here", "skills/get"} {
				if !strings.Contains(desc, want) {
					t.Errorf("search_tools' description lacks %q: %s", want, desc)
				}
			}

			// A deferred skill: found by search, fetched, read and verified.
			const want = "skill://kubernetes/kubernetes-audit/SKILL.md"
			out := searchSkillsTool(t, cs, "audit kubernetes permissions and unsafe settings", kindSkills)
			if len(out.Skills) == 0 || out.Skills[0].URI != want {
				t.Fatalf("search for the kubernetes audit skill found %+v, want %s first", out.Skills, want)
			}
			e, err := getSkill(cs, out.Skills[0].URI)
			if err != nil {
				t.Fatalf("skills/get of a deferred skill: %v", err)
			}
			if e.Name != "kubernetes-audit" || len(e.Files) != 2 {
				t.Fatalf("skills/get %s: name %q, %d files", want, e.Name, len(e.Files))
			}
			for _, f := range e.Files {
				b, err := readBytes(cs, f.URI)
				if err != nil {
					t.Fatalf("read %s: %v", f.URI, err)
				}
				if skills.Digest(b) != f.Digest || int64(len(b)) != f.Size {
					t.Errorf("read %s: %d bytes %s, manifest %d %s", f.URI, len(b), skills.Digest(b), f.Size, f.Digest)
				}
				if f.URI == want && !strings.Contains(string(b), "name: kubernetes-audit\n") {
					t.Errorf("SKILL.md of %s reads %q", want, b)
				}
			}
		})
	}
}
