package gateway

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/core/skills"
	"github.com/toolsearch/toolsearch/internal/redistest"
)

// skillsHTTPServer starts the TypeScript SDK's skills server
// (tests/skills/server) over streamable HTTP on a loopback port and
// returns its URL; the process ends with the test.
func skillsHTTPServer(t *testing.T, fixture string) string {
	t.Helper()
	entry := skillsServer(t, fixture, 2) // skips when it is not installed
	args := append(entry["args"].([]string), "--http")
	cmd := exec.Command(entry["command"].(string), args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
	}()
	select {
	case u, ok := <-line:
		if !ok || !strings.HasPrefix(u, "http://127.0.0.1:") {
			t.Fatalf("the skills server over HTTP printed %q, want its URL", u)
		}
		return u
	case <-time.After(60 * time.Second):
		t.Fatal("the skills server over HTTP did not print its URL within a minute")
		return ""
	}
}

// TestSkillsOverHTTPBothEras: a TypeScript SDK skills server over
// streamable HTTP, asked by the gateway in MCP 2026-07-28 (one request at a
// time, no session) and pinned to 2025-11-25 (answered statelessly): in
// both, every skill lists, skills/get answers and every file reads back
// with its manifest's digest.
func TestSkillsOverHTTPBothEras(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ pin, want string }{
		{"latest", "2026-07-28"},
		{"2025-11-25", "2025-11-25"},
	} {
		t.Run(tc.pin, func(t *testing.T) {
			t.Parallel()
			url := skillsHTTPServer(t, "beta")
			servers := map[string]any{"beta": map[string]any{"type": "http", "url": url, "protocolVersion": tc.pin}}
			g := startSkillsGateway(t, servers, nil)
			for _, st := range g.Statuses() {
				if st.Key == "beta" && st.Protocol != tc.want {
					t.Errorf("the gateway speaks %q to the server, want %q", st.Protocol, tc.want)
				}
			}
			cs := skillsClient(t, g, "full")
			list := listAllSkills(t, cs)
			if len(list) != 2 {
				t.Fatalf("skills/list gave %d skills, want the fixture's 2", len(list))
			}
			readsAsManifests(t, cs, list)
			if b, err := readBytes(cs, "skill://beta/pdf-forms/references/EXPORT.md"); err != nil || !strings.Contains(string(b), "JSON key") {
				t.Errorf("EXPORT.md over HTTP: %q, %v", b, err)
			}
		})
	}
}

// TestSkillsStatelessModernClient: a client of the gateway's HTTP front
// that speaks MCP 2026-07-28 one request at a time, with no session, finds
// a skill with the search tool, takes its entry with skills/get and reads
// its SKILL.md and another file; under full exposure it lists them.
func TestSkillsStatelessModernClient(t *testing.T) {
	t.Parallel()
	g := startSkillsGateway(t, twoSkillsServers(t), map[string]any{
		"http": map[string]any{"exposures": []string{"full", "search"}}})
	base := serveHTTP(t, g.Handler("")).URL
	call := func(endpoint, method, name, params string) map[string]any {
		t.Helper()
		status, res := post(t, base+endpoint, modernHeader(method, name, era2026), modernBody(method, params, era2026))
		if status != http.StatusOK || res["error"] != nil {
			t.Fatalf("%s %s: %d %v", endpoint, method, status, res)
		}
		r, _ := res["result"].(map[string]any)
		return r
	}

	r := call("/mcp/search", "tools/call", searchToolName,
		`{"name":"search_tools","arguments":{"query":"customer refund requests","kind":"skills"}}`)
	content, _ := r["content"].([]any)
	if len(content) == 0 {
		t.Fatalf("search_tools: %v", r)
	}
	text, _ := content[0].(map[string]any)["text"].(string)
	var found searchOutput
	if err := json.Unmarshal([]byte(text), &found); err != nil || len(found.Skills) == 0 {
		t.Fatalf("search_tools found no skill: %v %s", err, text)
	}
	uri := found.Skills[0].URI
	if uri != "skill://beta/acme/billing/refunds/SKILL.md" {
		t.Fatalf("search_tools found %s first, want the refunds skill", uri)
	}

	r = call("/mcp/search", "skills/get", "", fmt.Sprintf(`{"uri":%q}`, uri))
	raw, _ := json.Marshal(r["skill"])
	e, err := skills.Parse(raw)
	if err != nil {
		t.Fatalf("skills/get: %v (%s)", err, raw)
	}
	for _, f := range e.Files {
		r = call("/mcp/search", "resources/read", f.URI, fmt.Sprintf(`{"uri":%q}`, f.URI))
		contents, _ := r["contents"].([]any)
		if len(contents) != 1 {
			t.Fatalf("read %s: %v", f.URI, r)
		}
		c := contents[0].(map[string]any)
		var b []byte
		if s, ok := c["text"].(string); ok {
			b = []byte(s)
		} else if s, ok := c["blob"].(string); ok {
			if b, err = base64.StdEncoding.DecodeString(s); err != nil {
				t.Fatalf("read %s: blob: %v", f.URI, err)
			}
		}
		if skills.Digest(b) != f.Digest {
			t.Errorf("read %s: digest %s, manifest %s", f.URI, skills.Digest(b), f.Digest)
		}
	}

	r = call("/mcp/full", "skills/list", "", "{}")
	listed, _ := r["skills"].([]any)
	if len(listed) == 0 {
		t.Fatalf("skills/list under full exposure: %v", r)
	}
	if r = call("/mcp/search", "skills/list", "", "{}"); len(r["skills"].([]any)) != 0 {
		t.Errorf("skills/list under search exposure listed %d skills, want none (deferred)", len(r["skills"].([]any)))
	}
}

// TestSkillsDynamicListGrows: under dynamic exposure a session's
// skills/list starts empty and gains the skills its searches found, in the
// order found (cacheScope private: the list is the session's); under
// search exposure it stays empty, and another dynamic session's list is
// its own.
func TestSkillsDynamicListGrows(t *testing.T) {
	t.Parallel()
	g := startSkillsGateway(t, twoSkillsServers(t), nil)
	dyn, other, search := skillsClient(t, g, "dynamic"), skillsClient(t, g, "dynamic"), skillsClient(t, g, "search")
	list := func(cs *mcp.ClientSession) ([]string, string) {
		t.Helper()
		res, err := mcp.CallCustomMethod[*skillsListParams, *skillsListResult](context.Background(), cs, methodSkillsList, &skillsListParams{})
		if err != nil {
			t.Fatalf("skills/list: %v", err)
		}
		var uris []string
		for _, raw := range res.Skills {
			e, err := skills.Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			uris = append(uris, e.URI)
		}
		return uris, res.CacheScope
	}
	if uris, scope := list(dyn); len(uris) != 0 || scope != scopePublic {
		t.Fatalf("a dynamic session's first skills/list: %v (%s), want none (public)", uris, scope)
	}
	base := serveHTTP(t, g.Handler("")).URL
	all := g.SkillStats().Tokens
	if l, h := metricValue(t, base, "toolsearch_skills_tokens_loaded"), metricValue(t, base, "toolsearch_skills_tokens_held_back"); l != 0 || h != 3*all {
		t.Errorf("before any search: skills tokens loaded %d, held back %d; want 0 and three sessions' %d", l, h, all)
	}
	refunds, pdf := "skill://beta/acme/billing/refunds/SKILL.md", "skill://alpha/pdf-forms/SKILL.md"
	for _, cs := range []*mcp.ClientSession{dyn, search} {
		if got := searchSkillsTool(t, cs, "customer refund requests", kindSkills).Skills; len(got) == 0 || got[0].URI != refunds {
			t.Fatalf("search for refunds: %+v", got)
		}
	}
	if got := searchSkillsTool(t, dyn, "fill in pdf form fields for signing", kindBoth).Skills; len(got) == 0 || got[0].URI != pdf {
		t.Fatalf("search for pdf forms: %+v", got)
	}
	// select: names skills by name, URI or server-qualified name.
	if got := searchSkillsTool(t, search, "select:refunds,alpha__pdf-forms", kindSkills).Skills; len(got) != 2 || got[0].URI != refunds || got[1].URI != pdf {
		t.Errorf("select:refunds,alpha__pdf-forms: %+v", got)
	}
	uris, scope := list(dyn)
	if len(uris) < 2 || uris[0] != refunds || !slices.Contains(uris, pdf) || scope != scopePrivate {
		t.Errorf("the dynamic session's skills/list after two searches: %v (%s); want %s first, %s in it, private", uris, scope, refunds, pdf)
	}
	if uris, _ := list(search); len(uris) != 0 {
		t.Errorf("a search session's skills/list after a search: %v, want none", uris)
	}
	if uris, _ := list(other); len(uris) != 0 {
		t.Errorf("another dynamic session's skills/list: %v, want none", uris)
	}
	l, h := metricValue(t, base, "toolsearch_skills_tokens_loaded"), metricValue(t, base, "toolsearch_skills_tokens_held_back")
	if l == 0 || l >= all || l+h != 3*all {
		t.Errorf("after the searches: skills tokens loaded %d, held back %d; want the found skills' share of %d, the rest of three sessions' held", l, h, all)
	}
}

// TestClusterSharesSkills: a replica that has listed a skills server
// shares its manifest, skills included; a replica that never started the
// server serves the same skills from the cluster, and skills/get asks the
// server on demand.
func TestClusterSharesSkills(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	path := clusterConfig(t, map[string]any{"alpha": skillsServer(t, "alpha", 100)}, srv.URL(0), "skl", nil)
	a := newReplica(t, path, "a", true, false)
	waitState(t, a.g, "alpha", 60*time.Second, StateReady)
	waitShared(t, srv, "skl", a.g)

	b := newReplica(t, path, "b", false, false)
	uris := func(g *Gateway) []string {
		var out []string
		for _, r := range g.Skills() {
			out = append(out, r.URI)
		}
		return out
	}
	if ua, ub := uris(a.g), uris(b.g); len(ua) == 0 || !slices.Equal(ua, ub) {
		t.Fatalf("a serves skills %v, b (from the cluster) %v; want the same, not none", ua, ub)
	}
	if st := b.g.Statuses(); len(st) != 1 || !st[0].FromCache {
		t.Errorf("b's servers: %+v; want alpha from the shared manifest", st)
	}
	got := searchSkillsTool(t, skillsClient(t, b.g, "search"), "fill in pdf form fields", kindSkills).Skills
	if len(got) == 0 || got[0].URI != "skill://alpha/pdf-forms/SKILL.md" {
		t.Errorf("b's search for pdf forms: %+v", got)
	}
}
