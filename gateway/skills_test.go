package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/core/skills"
)

// skillsClient connects a Go SDK client that can send the extension's
// methods to the gateway, in exposure mode.
func skillsClient(t *testing.T, g *Gateway, mode string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := g.Connect(ctx, mode, st); err != nil {
		t.Fatal(err)
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "skills-client", Version: "1"}, nil)
	addSkillMethods(cl)
	cs, err := cl.Connect(ctx, ct, legacySession)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeSession(t, cs) })
	return cs
}

// listAllSkills pages through the gateway's skills/list.
func listAllSkills(t *testing.T, cs *mcp.ClientSession) []*skills.Entry {
	t.Helper()
	ctx := context.Background()
	var out []*skills.Entry
	cursor := ""
	for range 1000 {
		res, err := mcp.CallCustomMethod[*skillsListParams, *skillsListResult](ctx, cs, methodSkillsList, &skillsListParams{Cursor: cursor})
		if err != nil {
			t.Fatalf("skills/list: %v", err)
		}
		if res.ResultType != "complete" || res.CacheScope == "" {
			t.Fatalf("skills/list result lacks resultType or cacheScope: %+v", res)
		}
		for _, raw := range res.Skills {
			e, err := skills.Parse(raw)
			if err != nil {
				t.Fatalf("the gateway served an entry its own check refuses: %v", err)
			}
			out = append(out, e)
		}
		if res.NextCursor == "" {
			return out
		}
		cursor = res.NextCursor
	}
	t.Fatal("skills/list never ended")
	return nil
}

func getSkill(cs *mcp.ClientSession, uri string) (*skills.Entry, error) {
	res, err := mcp.CallCustomMethod[*skillsGetParams, *skillsGetResult](context.Background(), cs, methodSkillsGet, &skillsGetParams{URI: uri})
	if err != nil {
		return nil, err
	}
	return skills.Parse(res.Skill)
}

func readBytes(cs *mcp.ClientSession, uri string) ([]byte, error) {
	rr, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return nil, err
	}
	if len(rr.Contents) != 1 || rr.Contents[0].URI != uri {
		return nil, fmt.Errorf("read %s: contents %+v", uri, rr.Contents)
	}
	if rr.Contents[0].Blob != nil {
		return rr.Contents[0].Blob, nil
	}
	return []byte(rr.Contents[0].Text), nil
}

// readsAsManifests checks, for every skill of list, that skills/get
// answers with files and that each file reads back with the size and
// digest its manifest gives.
func readsAsManifests(t *testing.T, cs *mcp.ClientSession, list []*skills.Entry) {
	t.Helper()
	for _, e := range list {
		full, err := getSkill(cs, e.URI)
		if err != nil {
			t.Fatalf("skills/get %s: %v", e.URI, err)
		}
		if len(full.Files) == 0 {
			t.Fatalf("skills/get %s: no files", e.URI)
		}
		for _, f := range full.Files {
			b, err := readBytes(cs, f.URI)
			if err != nil {
				t.Fatalf("read %s: %v", f.URI, err)
			}
			if skills.Digest(b) != f.Digest || int64(len(b)) != f.Size {
				t.Errorf("read %s: %d bytes %s, manifest %d %s", f.URI, len(b), skills.Digest(b), f.Size, f.Digest)
			}
		}
	}
}

// searchSkillsTool calls search_tools and returns the skills it found.
func searchSkillsTool(t *testing.T, cs *mcp.ClientSession, query, kind string) searchOutput {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: searchToolName, Arguments: map[string]any{"query": query, "kind": kind}})
	if err != nil {
		t.Fatalf("search_tools: %v", err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if res.IsError {
		t.Fatalf("search_tools %q kind %q: %s", query, kind, text)
	}
	var out searchOutput
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("search_tools answer: %v\n%s", err, text)
	}
	return out
}

// skillsServer is a config entry running the TypeScript SDK's skills
// server (tests/skills/server) over a fixture folder; the test is skipped
// when its npm ci has not been run.
func skillsServer(t *testing.T, fixture string, pageSize int) map[string]any {
	t.Helper()
	dir := filepath.Join(repoRoot(t), "tests", "skills", "server")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server")); err != nil {
		t.Skipf("the skills server is not installed: run `npm ci` in %s", dir)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	return map[string]any{"command": node, "args": []string{filepath.Join(dir, "serve.mjs"), filepath.Join(dir, "fixtures", fixture), strconv.Itoa(pageSize)}}
}

// twoSkillsServers is the config of the two TypeScript skills servers,
// which both serve skill://pdf-forms/SKILL.md: alpha lists its skills in
// one page, beta one skill a page.
func twoSkillsServers(t *testing.T) map[string]any {
	t.Helper()
	return map[string]any{"alpha": skillsServer(t, "alpha", 100), "beta": skillsServer(t, "beta", 1)}
}

// startSkillsGateway starts a gateway over servers, with extra in its
// config, and waits until every server is ready.
func startSkillsGateway(t *testing.T, servers, extra map[string]any) *Gateway {
	t.Helper()
	g := startGateway(t, writeConfig(t, servers, extra))
	for k := range servers {
		waitState(t, g, k, 60*time.Second, StateReady)
	}
	return g
}

// TestSkillsTypeScriptServers: two TypeScript SDK skills servers that both
// serve skill://pdf-forms/SKILL.md; through the gateway each keeps its own
// URI, every file reads back with its manifest's digest, the search tool
// finds skills by their descriptions, and policy hides a denied skill
// everywhere.
func TestSkillsTypeScriptServers(t *testing.T) {
	t.Parallel()
	servers := twoSkillsServers(t)
	g := startSkillsGateway(t, servers, nil)
	cs := skillsClient(t, g, "search")
	if ext := cs.InitializeResult().Capabilities.Extensions; ext == nil || ext[skills.ExtensionID] == nil {
		t.Fatalf("the gateway does not declare the skills extension: %v", ext)
	} else if m, _ := ext[skills.ExtensionID].(map[string]any); len(m) != 1 || m["directoryRead"] != true {
		t.Errorf("the gateway declares %v for skills; want directoryRead and nothing else", m)
	}

	// Under search exposure skills are deferred: the list is empty, and
	// every skill answers skills/get and reads below all the same. A
	// session in full exposure lists them all.
	if deferred := listAllSkills(t, cs); len(deferred) != 0 {
		t.Errorf("skills/list under search exposure gave %d skills, want none", len(deferred))
	}
	list := listAllSkills(t, skillsClient(t, g, "full"))
	got := map[string]string{}
	for _, e := range list {
		got[e.URI] = e.Description
	}
	want := map[string]string{
		"skill://alpha/git-workflow/SKILL.md":        "Follow the team's Git conventions for branches, commits and rebasing",
		"skill://alpha/pdf-forms/SKILL.md":           "Fill in PDF forms field by field and flatten them for signing",
		"skill://beta/acme/billing/refunds/SKILL.md": "Process customer refund requests according to the billing policy",
		"skill://beta/pdf-forms/SKILL.md":            "Extract the data already typed into PDF form fields as JSON",
	}
	if len(got) != len(want) {
		t.Fatalf("skills/list gave %v, want %v", got, want)
	}
	for u, d := range want {
		if got[u] != d {
			t.Errorf("skill %s: description %q, want %q", u, got[u], d)
		}
	}

	// Every file of every skill reads back as its manifest says.
	readsAsManifests(t, cs, list)
	beta, err := getSkill(cs, "skill://beta/pdf-forms/SKILL.md")
	if err != nil || len(beta.Files) != 2 {
		t.Fatalf("beta's pdf-forms: %+v, %v", beta, err)
	}
	if b, err := readBytes(cs, "skill://beta/pdf-forms/references/EXPORT.md"); err != nil || !strings.Contains(string(b), "JSON key") {
		t.Errorf("beta's EXPORT.md: %q, %v", b, err)
	}
	for _, bad := range []string{"skill://alpha/pdf-forms/references/EXPORT.md", "skill://beta/pdf-forms/references/../../x/SKILL.md"} {
		if _, err := readBytes(cs, bad); err == nil {
			t.Errorf("read %s succeeded", bad)
		}
	}
	if _, err := getSkill(cs, "skill://alpha/nothing/SKILL.md"); err == nil || !strings.Contains(err.Error(), "serves no skill") {
		t.Errorf("skills/get of an unknown skill: %v", err)
	}

	// Search finds skills by their words, as references.
	out := searchSkillsTool(t, cs, "fill in pdf form fields", kindSkills)
	if len(out.Skills) == 0 || out.Skills[0].URI != "skill://alpha/pdf-forms/SKILL.md" || out.Skills[0].Kind != "skill" {
		t.Errorf("kind skills, fill in pdf form fields: %+v", out.Skills)
	}
	if len(out.Tools) != 0 {
		t.Errorf("kind skills returned tools: %+v", out.Tools)
	}
	out = searchSkillsTool(t, cs, "customer refund", kindBoth)
	if len(out.Skills) == 0 || out.Skills[0].URI != "skill://beta/acme/billing/refunds/SKILL.md" {
		t.Errorf("kind both, customer refund: %+v", out.Skills)
	}
	if out = searchSkillsTool(t, cs, "customer refund", kindTools); len(out.Skills) != 0 {
		t.Errorf("kind tools returned skills: %+v", out.Skills)
	}

	// Policy: a denied skill is absent everywhere and unreadable.
	g2 := startSkillsGateway(t, servers, map[string]any{"policy": map[string]any{"skills": map[string]any{"deny": []string{"beta/pdf-*"}}}})
	cs2 := skillsClient(t, g2, "search")
	for _, e := range listAllSkills(t, skillsClient(t, g2, "full")) {
		if e.URI == "skill://beta/pdf-forms/SKILL.md" {
			t.Errorf("a denied skill is listed")
		}
	}
	if _, err := getSkill(cs2, "skill://beta/pdf-forms/SKILL.md"); err == nil || !strings.Contains(err.Error(), "policy denies") {
		t.Errorf("skills/get of a denied skill: %v", err)
	}
	for _, u := range []string{"skill://beta/pdf-forms/SKILL.md", "skill://beta/pdf-forms/references/EXPORT.md"} {
		if _, err := readBytes(cs2, u); err == nil {
			t.Errorf("read of %s, in a denied skill, succeeded", u)
		}
	}
	if err := g2.resourceAllowed("beta", "skill://pdf-forms/references/EXPORT.md"); err == nil {
		t.Errorf("the server's own URI of a denied skill's file is allowed")
	}
	for _, s := range searchSkillsTool(t, cs2, "pdf form fields JSON", kindSkills).Skills {
		if s.URI == "skill://beta/pdf-forms/SKILL.md" {
			t.Errorf("search found a denied skill")
		}
	}
}

// hostileSkills is a streamable HTTP MCP server, written by hand, whose
// skills methods and reads answer what answer returns (a result's JSON,
// or an error message).
func hostileSkills(answer func(method string, params json.RawMessage) (result string, errMsg string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(body, &req) != nil || len(req.ID) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		var result, msg string
		switch req.Method {
		case "initialize":
			var p struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			_ = json.Unmarshal(req.Params, &p)
			result = fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{},"resources":{},"extensions":{%q:{}}},"serverInfo":{"name":"hostile","version":"1"}}`,
				p.ProtocolVersion, skills.ExtensionID)
		case "tools/list":
			result = `{"tools":[{"name":"noop","inputSchema":{"type":"object"}}]}`
		case "resources/list":
			result = `{"resources":[]}`
		case "resources/templates/list":
			result = `{"resourceTemplates":[]}`
		case "ping":
			result = `{}`
		default:
			result, msg = answer(req.Method, req.Params)
		}
		w.Header().Set("Content-Type", "application/json")
		if msg != "" || result == "" {
			if msg == "" {
				msg = "method not found"
			}
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":%q}}`, req.ID, msg)
			return
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, result)
	})
}

// oneSkill is an entry of one file, SKILL.md, listed with manifest
// (digest, size) and served with content.
func oneSkill(name string, listed []byte, size int64) string {
	return fmt.Sprintf(`{"uri":"skill://%s/SKILL.md","frontmatter":{"name":%q,"description":"the %s skill"},"resources":[{"uri":"skill://%s/SKILL.md","digest":%q,"size":%d}]}`,
		name, name, name, name, skills.Digest(listed), size)
}

func skillMD(name string) string {
	return "---\nname: " + name + "\ndescription: the " + name + " skill\n---\n\n# " + name + "\n"
}

// TestSkillsHostileUpstream: servers that lie about digests, send a 50 MB
// SKILL.md, list files that climb out of their skill and list 100,000
// skills get clear errors, and the gateway keeps bounded state.
func TestSkillsHostileUpstream(t *testing.T) {
	t.Parallel()
	honest := skillMD("honest")
	lie := skillMD("liar")
	huge := strings.Repeat("a", 50<<20)
	readAnswer := func(files map[string]string) func(string, json.RawMessage) (string, string) {
		return func(method string, params json.RawMessage) (string, string) {
			var p struct {
				URI string `json:"uri"`
			}
			_ = json.Unmarshal(params, &p)
			switch method {
			case methodSkillsList:
				var entries []string
				for name, c := range files {
					entries = append(entries, oneSkill(name, []byte(c), int64(len(c))))
				}
				return `{"skills":[` + strings.Join(entries, ",") + `],"ttlMs":0,"cacheScope":"public"}`, ""
			case methodSkillsGet:
				name := strings.TrimSuffix(strings.TrimPrefix(p.URI, "skill://"), "/SKILL.md")
				if c, ok := files[name]; ok {
					return `{"skill":` + oneSkill(name, []byte(c), int64(len(c))) + `,"ttlMs":0,"cacheScope":"public"}`, ""
				}
				return "", "no skill at " + p.URI
			case "resources/read":
				switch p.URI {
				case "skill://honest/SKILL.md":
					b, _ := json.Marshal(honest)
					return fmt.Sprintf(`{"contents":[{"uri":%q,"mimeType":"text/markdown","text":%s}]}`, p.URI, b), ""
				case "skill://liar/SKILL.md":
					b, _ := json.Marshal(strings.ToUpper(lie)) // same size, other bytes
					return fmt.Sprintf(`{"contents":[{"uri":%q,"text":%s}]}`, p.URI, b), ""
				case "skill://bloat/SKILL.md":
					return fmt.Sprintf(`{"contents":[{"uri":%q,"text":%q}]}`, p.URI, huge), ""
				}
				return "", "no resource " + p.URI
			}
			return "", ""
		}
	}
	// Climbing: entries whose files leave the skill, and one 50 MB SKILL.md
	// by its manifest.
	climbing := func(method string, params json.RawMessage) (string, string) {
		if method != methodSkillsList {
			return "", "no"
		}
		d := skills.Digest([]byte("x"))
		return `{"skills":[` +
			`{"uri":"skill://evil/SKILL.md","frontmatter":{"name":"evil","description":"d"},"resources":[{"uri":"skill://evil/SKILL.md","digest":"` + d + `","size":1},{"uri":"skill://evil/../../etc/passwd","digest":"` + d + `","size":1}]},` +
			`{"uri":"skill://enc/SKILL.md","frontmatter":{"name":"enc","description":"d"},"resources":[{"uri":"skill://enc/SKILL.md","digest":"` + d + `","size":1},{"uri":"skill://enc/%2e%2e/x","digest":"` + d + `","size":1}]},` +
			`{"uri":"skill://big/SKILL.md","frontmatter":{"name":"big","description":"d"},"resources":[{"uri":"skill://big/SKILL.md","digest":"` + d + `","size":52428800}]},` +
			`{"uri":"/etc/SKILL.md","frontmatter":{"name":"etc","description":"d"},"resources":"dynamic"},` +
			`{"uri":"skill://fine/SKILL.md","frontmatter":{"name":"fine","description":"d"},"resources":"dynamic"}` +
			`],"ttlMs":0,"cacheScope":"public"}`, ""
	}
	// Many: 100,000 skills, 1,000 a page.
	many := func(method string, params json.RawMessage) (string, string) {
		if method != methodSkillsList {
			return "", "no"
		}
		var p struct {
			Cursor string `json:"cursor"`
		}
		_ = json.Unmarshal(params, &p)
		from, _ := strconv.Atoi(p.Cursor)
		var b strings.Builder
		b.WriteString(`{"skills":[`)
		for i := from; i < from+1000; i++ {
			if i > from {
				b.WriteByte(',')
			}
			b.WriteString(oneSkill(fmt.Sprintf("s%06d", i), []byte("x"), 1))
		}
		b.WriteString(`],"ttlMs":0,"cacheScope":"public"`)
		if from+1000 < 100000 {
			fmt.Fprintf(&b, `,"nextCursor":"%d"`, from+1000)
		}
		b.WriteString("}")
		return b.String(), ""
	}
	servers := map[string]any{
		"files": map[string]any{"type": "http", "url": serveHTTP(t, hostileSkills(readAnswer(map[string]string{"honest": honest, "liar": lie, "bloat": "small"}))).URL},
		"climb": map[string]any{"type": "http", "url": serveHTTP(t, hostileSkills(climbing)).URL},
		"many":  map[string]any{"type": "http", "url": serveHTTP(t, hostileSkills(many)).URL},
	}
	g := startSkillsGateway(t, servers, nil)
	cs := skillsClient(t, g, "search")

	t.Run("reads", func(t *testing.T) {
		tests := []struct {
			uri, want string
		}{
			{"skill://files/honest/SKILL.md", ""},
			{"skill://files/liar/SKILL.md", "digest mismatch"},
			{"skill://files/bloat/SKILL.md", ""}, // any error: over the message bound or the manifest's size
			{"skill://files/honest/../liar/SKILL.md", "climbs"},
			{"skill://files/honest/%2E%2E/liar/SKILL.md", "percent-encoding"},
			{"skill://files/honest/other.md", "manifest does not list it"},
			{"skill://climb/evil/SKILL.md", "no skill of server"},
		}
		for _, tc := range tests {
			b, err := readBytes(cs, tc.uri)
			switch {
			case tc.uri == "skill://files/honest/SKILL.md":
				if err != nil || string(b) != honest {
					t.Errorf("read %s = %q, %v", tc.uri, b, err)
				}
			case err == nil:
				t.Errorf("read %s succeeded (%d bytes)", tc.uri, len(b))
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("read %s: %v, want %q", tc.uri, err, tc.want)
			}
		}
	})

	t.Run("entries", func(t *testing.T) {
		sv := g.skillView()
		var climbURIs []string
		for _, r := range sv.list {
			if r.Server == "climb" {
				climbURIs = append(climbURIs, r.URI)
			}
		}
		if strings.Join(climbURIs, " ") != "skill://climb/fine/SKILL.md" {
			t.Errorf("of the climbing server's skills the gateway kept %v, want only the valid one", climbURIs)
		}
		if _, err := getSkill(cs, "skill://climb/big/SKILL.md"); err == nil {
			t.Errorf("skills/get of a 50 MB SKILL.md succeeded")
		}
	})

	t.Run("many", func(t *testing.T) {
		n := 0
		for _, r := range g.skillView().list {
			if r.Server == "many" {
				n++
			}
		}
		if n != maxSkillsPerServer {
			t.Errorf("kept %d skills of a server listing 100,000, want %d", n, maxSkillsPerServer)
		}
		full := skillsClient(t, g, "full")
		res, err := mcp.CallCustomMethod[*skillsListParams, *skillsListResult](context.Background(), full, methodSkillsList, &skillsListParams{})
		if err != nil || len(res.Skills) != skills.ListPageSize || res.NextCursor == "" {
			t.Fatalf("first page: %d skills, cursor %q, %v", len(res.Skills), res.NextCursor, err)
		}
		if _, err := mcp.CallCustomMethod[*skillsListParams, *skillsListResult](context.Background(), full, methodSkillsList, &skillsListParams{Cursor: "-5"}); err == nil {
			t.Errorf("a forged cursor was accepted")
		}
	})
}

// TestSkillsServerOwnURIs: the two TypeScript servers list their skill
// files as resources and skill://{+path} as a template; through the
// gateway these are the gateway's URIs (skill://alpha/…), and a read by a
// server's own URI (skill://pdf-forms/SKILL.md, which both serve), by any
// route, fails with an error naming the gateway's URIs to read instead.
func TestSkillsServerOwnURIs(t *testing.T) {
	t.Parallel()
	servers := twoSkillsServers(t)
	g := startSkillsGateway(t, servers, nil)
	cs := skillsClient(t, g, "search")
	ctx := context.Background()

	tpls, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, tp := range tpls.ResourceTemplates {
		got[tp.URITemplate] = true
		if strings.HasPrefix(tp.URITemplate, "skill://{") {
			t.Errorf("a server's own skill template is listed: %s", tp.URITemplate)
		}
	}
	for _, want := range []string{"skill://alpha/{+path}", "skill://beta/{+path}"} {
		if !got[want] {
			t.Errorf("resources/templates/list lacks %s: %v", want, got)
		}
	}
	res, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, r := range res.Resources {
		listed[r.URI] = true
		if !strings.HasPrefix(r.URI, "skill://alpha/") && !strings.HasPrefix(r.URI, "skill://beta/") {
			t.Errorf("resources/list has %s, not a gateway skill URI", r.URI)
		}
	}
	for _, want := range []string{"skill://alpha/pdf-forms/SKILL.md", "skill://beta/pdf-forms/SKILL.md"} {
		if !listed[want] {
			t.Fatalf("resources/list lacks %s: %v", want, listed)
		}
		if _, err := readBytes(cs, want); err != nil {
			t.Errorf("read %s, listed: %v", want, err)
		}
	}

	tests := []struct {
		uri  string
		want []string // in the error
		not  string   // not in the error
	}{
		{"skill://pdf-forms/SKILL.md", []string{"skill://alpha/pdf-forms/SKILL.md (server alpha)", "skill://beta/pdf-forms/SKILL.md (server beta)"}, ""},
		{"skill://git-workflow/SKILL.md", []string{"skill://alpha/git-workflow/SKILL.md (server alpha)"}, "beta"},
		{"skill://acme/billing/refunds/SKILL.md", []string{"skill://beta/acme/billing/refunds/SKILL.md (server beta)"}, "server alpha"},
		{"toolsearch://alpha/" + url.PathEscape("skill://pdf-forms/SKILL.md"), nil, ""}, // no such route: any error
	}
	for _, tc := range tests {
		b, err := readBytes(cs, tc.uri)
		if err == nil {
			t.Errorf("read %s succeeded, unchecked (%d bytes)", tc.uri, len(b))
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("read %s: %v\nwant it to name %s", tc.uri, err, w)
			}
		}
		if tc.not != "" && strings.Contains(err.Error(), tc.not) {
			t.Errorf("read %s: %v names %s", tc.uri, err, tc.not)
		}
	}
	if _, err := g.readResource(ctx, nil, "beta", "skill://pdf-forms/references/EXPORT.md"); err == nil || !strings.Contains(err.Error(), "skill://beta/pdf-forms/references/EXPORT.md") {
		t.Errorf("the gateway's own read of a server's skill URI: %v", err)
	}
}

// TestSkillsDirectoryRead: resources/directory/read of the gateway's skill
// directories is answered from the manifests: a skill's root and its
// folders, and the folders above a nested skill; a file, an unknown
// folder and a URI outside the skills are -32602.
func TestSkillsDirectoryRead(t *testing.T) {
	t.Parallel()
	servers := twoSkillsServers(t)
	g := startSkillsGateway(t, servers, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := g.Connect(ctx, "search", st); err != nil {
		t.Fatal(err)
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "dir-client", Version: "1"}, nil)
	_ = mcp.AddSendingCustomMethod[*directoryReadParams, *directoryReadResult](cl, methodDirectoryRead)
	cs, err := cl.Connect(ctx, ct, legacySession)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeSession(t, cs) })
	read := func(uri string) (map[string]string, error) {
		res, err := mcp.CallCustomMethod[*directoryReadParams, *directoryReadResult](ctx, cs, methodDirectoryRead, &directoryReadParams{URI: uri})
		if err != nil {
			return nil, err
		}
		out := map[string]string{}
		for _, r := range res.Resources {
			out[r.URI] = r.MIMEType
		}
		return out, nil
	}
	tests := []struct {
		uri  string
		want map[string]string
	}{
		{"skill://alpha/pdf-forms", map[string]string{"skill://alpha/pdf-forms/SKILL.md": "text/markdown", "skill://alpha/pdf-forms/references": mimeDirectory}},
		{"skill://alpha/pdf-forms/references", map[string]string{"skill://alpha/pdf-forms/references/FIELDS.md": "text/markdown"}},
		{"skill://beta/pdf-forms/references", map[string]string{"skill://beta/pdf-forms/references/EXPORT.md": "text/markdown"}},
		{"skill://beta/acme", map[string]string{"skill://beta/acme/billing": mimeDirectory}},
		{"skill://beta/acme/billing", map[string]string{"skill://beta/acme/billing/refunds": mimeDirectory}},
		{"skill://alpha/pdf-forms/SKILL.md", nil},
		{"skill://alpha/pdf-forms/nothing", nil},
		{"skill://alpha/acme", nil},
		{"skill://pdf-forms", nil},
		{"skill://alpha/pdf-forms/../git-workflow", nil},
	}
	for _, tc := range tests {
		got, err := read(tc.uri)
		if tc.want == nil {
			var je *jsonrpc.Error
			if err == nil || !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
				t.Errorf("directory read of %s: %v, %v; want -32602", tc.uri, got, err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("directory read of %s: %v, %v; want %v", tc.uri, got, err, tc.want)
			continue
		}
		for u, m := range tc.want {
			if got[u] != m {
				t.Errorf("directory read of %s: %s is %q, want %q", tc.uri, u, got[u], m)
			}
		}
	}
}
