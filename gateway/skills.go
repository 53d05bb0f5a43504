package gateway

// Skills (the MCP Skills extension, io.modelcontextprotocol/skills). The
// gateway lists the skills of every server that declares the extension
// (skills/list, every page, within bounds), keeps them beside the server's
// tools in its manifest, and serves them to clients:
//
//   - skills/list: the skills of every server policy lets clients see, each
//     under the gateway's URI for it (core/skills naming: the server's key
//     first, skill://docs/pdf-forms/SKILL.md), paginated; skills are
//     deferred as tools are: a session under search or dynamic exposure
//     gets only those of servers configured with alwaysLoad, and finds the
//     others with search_tools (the extension lets a listing be partial);
//     under dynamic exposure, the skills search found for the session are
//     listed too, after those, as found tools join its tools/list;
//   - skills/get: the server's current entry for one skill, asked of the
//     server and held, URIs rewritten the same way;
//   - resources/read of such a URI: read from the owning server under its
//     own URI, checked against the skill's manifest (listed, size, digest;
//     for SKILL.md, the frontmatter's name and description) before a byte
//     reaches the client.
//
// A skill denied by policy (policy.skills globs over skill paths) is in no
// list and no search, skills/get refuses it, and its files cannot be read
// by any URI. A server's skills are listed again when it says its
// resources changed (the extension defines no notification of its own;
// servers send resources/list_changed).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/core/policy"
	"github.com/toolsearch/toolsearch/core/search"
	"github.com/toolsearch/toolsearch/core/skills"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/gateway/metrics"
	"github.com/toolsearch/toolsearch/gateway/upstream"
)

// The extension's methods.
const (
	methodSkillsList = "skills/list"
	methodSkillsGet  = "skills/get"
)

// Bounds of what the gateway takes from one server.
const (
	// maxSkillsPerServer bounds the skills kept of one server; the rest
	// of its listing is not read.
	maxSkillsPerServer = 10000
	// maxSkillPages bounds the pages of one listing.
	maxSkillPages = 200
	// maxHeldSkills bounds the entries skills/get has fetched and the
	// gateway holds to verify reads by.
	maxHeldSkills = 4096
	// maxSkillAncestors bounds the folders a read of an unlisted file
	// asks skills/get about.
	maxSkillAncestors = 8
)

// skillsListParams are skills/list's params.
type skillsListParams struct {
	mcp.ParamsBase
	Cursor string `json:"cursor,omitempty"`
}

// skillsGetParams are skills/get's params.
type skillsGetParams struct {
	mcp.ParamsBase
	URI string `json:"uri"`
}

// skillsListResult is skills/list's result. Skills are kept as sent.
type skillsListResult struct {
	mcp.ResultBase
	ResultType string            `json:"resultType,omitempty"`
	Skills     []json.RawMessage `json:"skills"`
	NextCursor string            `json:"nextCursor,omitempty"`
	TTLMs      int               `json:"ttlMs"`
	CacheScope string            `json:"cacheScope,omitempty"`
}

// skillsGetResult is skills/get's result.
type skillsGetResult struct {
	mcp.ResultBase
	ResultType string          `json:"resultType,omitempty"`
	Skill      json.RawMessage `json:"skill"`
	TTLMs      int             `json:"ttlMs"`
	CacheScope string          `json:"cacheScope,omitempty"`
}

// addSkillMethods lets an upstream client send the extension's methods.
func addSkillMethods(c *mcp.Client) {
	_ = mcp.AddSendingCustomMethod[*skillsListParams, *skillsListResult](c, methodSkillsList)
	_ = mcp.AddSendingCustomMethod[*skillsGetParams, *skillsGetResult](c, methodSkillsGet)
	_ = mcp.AddSendingCustomMethod[*directoryReadParams, *directoryReadResult](c, methodDirectoryRead)
}

// declaresSkills reports whether a server's capabilities declare the
// extension.
func declaresSkills(caps *mcp.ServerCapabilities) bool {
	if caps == nil {
		return false
	}
	_, ok := caps.Extensions[skills.ExtensionID]
	return ok
}

// listSkills pages through a server's skills/list on cs when it declares the
// extension, keeping each valid entry as the server sent it. Invalid
// entries (which the extension says must not be loaded), a URI listed
// twice, pages past maxSkillPages and skills past maxSkillsPerServer are
// left out and logged; a failed page ends the listing with what came
// before it.
func listSkills(ctx context.Context, log *slog.Logger, cs *mcp.ClientSession, caps *mcp.ServerCapabilities) []json.RawMessage {
	if !declaresSkills(caps) {
		return nil
	}
	var (
		out     []json.RawMessage
		seen    = map[string]bool{}
		invalid int
		cursor  string
	)
	for page := 0; ; page++ {
		if page == maxSkillPages {
			log.Warn("skills/list has more pages than the gateway reads; the rest are left out", "pages", maxSkillPages)
			break
		}
		res, err := mcp.CallCustomMethod[*skillsListParams, *skillsListResult](ctx, cs, methodSkillsList, &skillsListParams{Cursor: cursor})
		if err != nil {
			log.Warn("skills/list failed", "err", err, "kept", len(out))
			break
		}
		for _, raw := range res.Skills {
			e, err := skills.Parse(raw)
			if err != nil {
				if invalid < 5 {
					log.Warn("a skill entry is invalid and left out", "err", err)
				}
				invalid++
				continue
			}
			if seen[e.URI] {
				continue
			}
			seen[e.URI] = true
			out = append(out, raw)
			if len(out) == maxSkillsPerServer {
				log.Warn("the server lists more skills than the gateway keeps; the rest are left out", "kept", maxSkillsPerServer)
				return out
			}
		}
		if res.NextCursor == "" || res.NextCursor == cursor {
			break
		}
		cursor = res.NextCursor
	}
	if invalid > 0 {
		log.Warn("invalid skill entries left out", "count", invalid)
	}
	return out
}

// skillView returns the skills view of the current catalog and policy,
// building it when either changed.
func (g *Gateway) skillView() *skillView {
	v := g.cur.Load()
	pol := v.names.pol
	st := &g.skills
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.cur != nil && st.cur.from == v && st.cur.pol == pol {
		return st.cur
	}
	if st.parsed == nil {
		st.parsed = map[string]*serverSkills{}
	}
	sv := &skillView{from: v, pol: pol, byURI: map[string]skills.Ref{}, declared: map[string]bool{},
		denied: map[string][]*skills.Entry{}}
	for _, k := range sortedKeys(v.extras) {
		m := v.extras[k]
		if m == nil || !declaresSkills(m.Capabilities) {
			delete(st.parsed, k)
			continue
		}
		sv.declared[k] = true
		ps := st.parsed[k]
		if ps == nil || ps.n != len(m.Skills) || (len(m.Skills) > 0 && ps.from != &m.Skills[0]) {
			ps = parseSkills(m.Skills)
			st.parsed[k] = ps
		}
		for _, e := range ps.entries {
			if pol.DecideSkill(k, e.Path).Decision == policy.Deny {
				sv.denied[k] = append(sv.denied[k], e)
				continue
			}
			r, err := skills.NewRef(k, e)
			if err != nil {
				continue
			}
			sv.list = append(sv.list, r)
			sv.byURI[r.URI] = r
			if u := g.ups()[k]; u != nil && u.Config().AlwaysLoad {
				sv.always = append(sv.always, r)
			}
		}
	}
	ix, err := skills.NewIndex(sv.list)
	if err != nil {
		g.log.Warn("skills cannot all be searched", "err", err)
	}
	sv.index = ix
	sv.tokens = skills.FirstListTokens(sv.list)
	st.cur = sv
	return sv
}

// parseSkills parses a manifest's skills, in URI order. Entries were
// checked when listed; one that no longer parses (a manifest cached by
// another version) is left out.
func parseSkills(raws []json.RawMessage) *serverSkills {
	ps := &serverSkills{n: len(raws)}
	if len(raws) > 0 {
		ps.from = &raws[0]
	}
	for _, raw := range raws {
		if e, err := skills.Parse(raw); err == nil {
			ps.entries = append(ps.entries, e)
		}
	}
	sort.Slice(ps.entries, func(i, j int) bool { return ps.entries[i].URI < ps.entries[j].URI })
	return ps
}

// skillsPage writes skills as a skills/list page does.
func skillsPage(refs []skills.Ref) []json.RawMessage {
	out := make([]json.RawMessage, len(refs))
	for i, r := range refs {
		out[i] = r.Wire()
	}
	return out
}

// invalidParams is the error the extension gives for an unknown skill or
// a bad URI (-32602).
func invalidParams(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// serveSkills adds the extension's methods to a client session's server,
// and the middleware that routes reads of skill files.
func (s *session) serveSkills() {
	g := s.g
	_ = mcp.AddReceivingCustomMethod(s.server, methodSkillsList,
		func(ctx context.Context, _ *mcp.ServerSession, p *skillsListParams) (*skillsListResult, error) {
			deferred, found := s.skillsListing()
			res, err := g.listSkillsFor(p, deferred, found)
			if err == nil {
				g.metrics.SkillsListed()
			}
			return res, err
		})
	_ = mcp.AddReceivingCustomMethod(s.server, methodSkillsGet,
		func(ctx context.Context, ss *mcp.ServerSession, p *skillsGetParams) (*skillsGetResult, error) {
			res, server, err := g.getSkillFor(ctx, ss, p)
			g.skillFetched(server, err) // skillstats.go
			return res, err
		})
	_ = mcp.AddReceivingCustomMethod(s.server, methodDirectoryRead,
		func(ctx context.Context, ss *mcp.ServerSession, p *directoryReadParams) (*directoryReadResult, error) {
			return g.readDirectoryFor(ctx, ss, p)
		})
	s.server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "resources/read" {
				return next(ctx, method, req)
			}
			p, ok := req.GetParams().(*mcp.ReadResourceParams)
			if !ok || p == nil {
				return next(ctx, method, req)
			}
			server, orig, ok := g.skillOwner(p.URI)
			if !ok {
				if err := g.nativeSkillRead("", p.URI); err != nil {
					return nil, err
				}
				return next(ctx, method, req)
			}
			ss, _ := req.GetSession().(*mcp.ServerSession)
			res, refused, err := g.readSkillFile(ctx, ss, server, orig, p)
			switch {
			case err == nil:
				g.skillRead(server, metrics.SkillReadVerified) // skillstats.go
			case refused:
				g.skillRead(server, metrics.SkillReadRefused)
			default:
				g.skillRead(server, metrics.SkillReadError)
			}
			return res, err
		}
	})
}

// skillOwner finds the server and its own URI of a gateway skill URI: one
// core/skills Qualify makes, of a configured server that declares the
// extension.
func (g *Gateway) skillOwner(uri string) (server, orig string, ok bool) {
	if !strings.HasPrefix(uri, skills.Scheme+"://") {
		return "", "", false
	}
	server, orig, ok = skills.Unqualify(uri)
	if !ok {
		return "", "", false
	}
	if _, configured := g.ups()[server]; !configured {
		return "", "", false
	}
	return server, orig, g.skillView().declared[server]
}

// skillsListing says what the session's skills/list gives: with deferred,
// the skills of servers configured with alwaysLoad and those in found
// (the gateway URIs search found for a session under dynamic exposure),
// else every visible skill. Under search and dynamic exposure, as for
// tools, the model finds skills with search_tools. The exposure is read at
// each list, since auto exposure may switch a session from full to
// dynamic (sync).
func (s *session) skillsListing() (deferred bool, found []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mode == config.ExposureDynamic {
		found = slices.Clone(s.foundSkills)
	}
	return s.mode != config.ExposureFull, found
}

// maxDynamicSkills bounds the skills a dynamic session's skills/list
// gains from its searches: the oldest found go first.
const maxDynamicSkills = 64

// loadSkills adds the skills a search found to a dynamic session's
// skills/list.
func (s *session) loadSkills(hits []skillHitOut) {
	if len(hits) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mode != config.ExposureDynamic {
		return
	}
	for _, h := range hits {
		if !slices.Contains(s.foundSkills, h.URI) {
			s.foundSkills = append(s.foundSkills, h.URI)
		}
	}
	if n := len(s.foundSkills); n > maxDynamicSkills {
		s.foundSkills = slices.Clone(s.foundSkills[n-maxDynamicSkills:])
	}
}

// listSkillsFor answers a client's skills/list: one page of the visible
// skills, or with deferred set, of those of always-load servers and then
// those of found that are still visible (in the order found). A deferred
// skill is left out of the list, not refused: skills/get and reads of its
// files answer as for any visible skill (the extension lets a listing be
// partial and requires skills/get for every skill served). A list with
// found skills is the session's own: its cacheScope is private. The cursor
// is the offset of the page, as a decimal number.
func (g *Gateway) listSkillsFor(p *skillsListParams, deferred bool, found []string) (*skillsListResult, error) {
	sv := g.skillView()
	list, scope := sv.list, scopePublic
	if deferred {
		list = sv.always
		if added := sv.found(found); len(added) > 0 {
			list, scope = append(slices.Clip(list), added...), scopePrivate
		}
	}
	from := 0
	if p != nil && p.Cursor != "" {
		n, err := strconv.Atoi(p.Cursor)
		if err != nil || n < 0 || n > len(list) {
			return nil, invalidParams("skills/list: cursor %.40q is not one this gateway gave", p.Cursor)
		}
		from = n
	}
	to := min(len(list), from+skills.ListPageSize)
	res := &skillsListResult{ResultType: "complete", Skills: skillsPage(list[from:to]), CacheScope: scope}
	if to < len(list) {
		res.NextCursor = strconv.Itoa(to)
	}
	return res, nil
}

// getSkillFor answers a client's skills/get: the owning server's current
// entry, held for verifying reads, its URIs the gateway's.
// The server is "" when the URI names none.
func (g *Gateway) getSkillFor(ctx context.Context, ss *mcp.ServerSession, p *skillsGetParams) (*skillsGetResult, string, error) {
	if p == nil || p.URI == "" {
		return nil, "", invalidParams("skills/get needs the uri of a skill's SKILL.md")
	}
	server, orig, ok := g.skillOwner(p.URI)
	if !ok {
		return nil, "", invalidParams("no skill is served at %.300s: skill URIs of this gateway are skill://<server>/<skill path>/SKILL.md, as skills/list gives them", p.URI)
	}
	if _, _, err := skills.SplitSkillURI(orig); err != nil {
		return nil, server, invalidParams("no skill is served at %.300s: %v", p.URI, err)
	}
	e, err := g.fetchSkill(ctx, ss, server, orig)
	if err != nil {
		return nil, server, err
	}
	r := skills.Ref{Server: server, Entry: e, URI: p.URI}
	return &skillsGetResult{ResultType: "complete", Skill: r.Wire(), CacheScope: "public"}, server, nil
}

// fetchSkill asks the server for the entry of the skill at orig (its
// SKILL.md), checks it and holds it. Policy is checked first.
func (g *Gateway) fetchSkill(ctx context.Context, ss *mcp.ServerSession, server, orig string) (*skills.Entry, error) {
	_, path, err := skills.SplitSkillURI(orig)
	if err != nil {
		return nil, invalidParams("%v", err)
	}
	if v := g.viewPolicy().DecideSkill(server, path); v.Decision == policy.Deny {
		return nil, invalidParams("skill %s of server %q is not available: policy denies it (%s)", path, server, v.Reason())
	}
	u := g.ups()[server]
	if u == nil {
		return nil, invalidParams("server %q is not configured", server)
	}
	res, err := onUpstream(ctx, g, ss, u, func(ctx context.Context, cs *mcp.ClientSession) (*skillsGetResult, error) {
		return mcp.CallCustomMethod[*skillsGetParams, *skillsGetResult](ctx, cs, methodSkillsGet, &skillsGetParams{URI: orig})
	})
	if err != nil {
		var je *jsonrpc.Error
		if errors.As(err, &je) && je.Code == jsonrpc.CodeInvalidParams {
			return nil, invalidParams("server %q serves no skill at %s: %s", server, orig, je.Message)
		}
		return nil, fmt.Errorf("skills/get of server %q: %w", server, err)
	}
	e, err := skills.Parse(res.Skill)
	if err != nil {
		return nil, fmt.Errorf("server %q answered skills/get with an entry the gateway refuses: %w", server, err)
	}
	if e.URI != orig {
		return nil, fmt.Errorf("server %q answered skills/get for %s with the entry of %.300s", server, orig, e.URI)
	}
	g.holdSkill(server, e)
	return e, nil
}

// holdSkill keeps an entry skills/get returned, to verify reads by.
func (g *Gateway) holdSkill(server string, e *skills.Entry) {
	st := &g.skills
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.held == nil || st.nHeld >= maxHeldSkills {
		st.held, st.nHeld = map[string]map[string]*skills.Entry{}, 0
	}
	m := st.held[server]
	if m == nil {
		m = map[string]*skills.Entry{}
		st.held[server] = m
	}
	if _, ok := m[e.URI]; !ok {
		st.nHeld++
	}
	m[e.URI] = e
}

// heldSkill finds the entry of the skill holding orig: the deepest skill
// folder containing it, among the entries skills/get fetched (fresher)
// and those listed.
func (g *Gateway) heldSkill(sv *skillView, server, orig string) *skills.Entry {
	contains := func(e *skills.Entry) bool { return orig == e.URI || strings.HasPrefix(orig, e.Root+"/") }
	var best *skills.Entry
	better := func(e *skills.Entry) {
		if contains(e) && (best == nil || len(e.Root) > len(best.Root)) {
			best = e
		}
	}
	st := &g.skills
	st.mu.Lock()
	for _, e := range st.held[server] {
		better(e)
	}
	st.mu.Unlock()
	if best != nil {
		return best
	}
	for _, r := range sv.list {
		if r.Server == server {
			better(r.Entry)
		}
	}
	for _, e := range sv.denied[server] {
		better(e)
	}
	return best
}

// resourceAllowed returns an error when policy denies the server's
// resource uri: the resource itself (resolve.go), or the skill it is a
// file of.
func (g *Gateway) resourceAllowed(server, uri string) error {
	if err := g.cur.Load().names.resourceAllowed(server, uri); err != nil {
		return err
	}
	return g.skillFileAllowed(server, uri)
}

// skillFileAllowed returns an error when uri, a resource of server, lies
// inside a skill policy denies (by any URI a client may name it by: the
// server's own, through the gateway's resource routes).
func (g *Gateway) skillFileAllowed(server, uri string) error {
	if g.viewPolicy().Empty() {
		return nil
	}
	sv := g.skillView()
	for _, e := range sv.denied[server] {
		if uri == e.URI || strings.HasPrefix(uri, e.Root+"/") {
			v := g.viewPolicy().DecideSkill(server, e.Path)
			return fmt.Errorf("resource %s of server %q is a file of skill %s, which is not available: policy denies it (%s)", uri, server, e.Path, v.Reason())
		}
	}
	return nil
}

// readSkillFile reads a skill's file for a client: from its server, under
// the server's URI, verified against the skill's manifest. refused says
// that the content failed verification.
func (g *Gateway) readSkillFile(ctx context.Context, ss *mcp.ServerSession, server, orig string, p *mcp.ReadResourceParams) (res *mcp.ReadResourceResult, refused bool, err error) {
	gwURI := p.URI
	_, rest, _ := strings.Cut(orig, "://")
	if err := skills.CheckPath(rest); err != nil {
		return nil, false, invalidParams("%.300s is not a skill file: %v", gwURI, err)
	}
	sv := g.skillView()
	e := g.heldSkill(sv, server, orig)
	if e == nil {
		e = g.findSkill(ctx, ss, server, orig)
	}
	if e == nil {
		return nil, false, invalidParams("no skill of server %q holds %s: ask skills/list or skills/get for its skills", server, orig)
	}
	if v := g.viewPolicy().DecideSkill(server, e.Path); v.Decision == policy.Deny {
		return nil, false, invalidParams("skill %s of server %q is not available: policy denies it (%s)", e.Path, server, v.Reason())
	}
	if !e.Dynamic {
		if _, ok := e.File(orig); !ok {
			return nil, true, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
				"%s is not a file of skill %s: its manifest does not list it (call skills/get for the skill's current files)", gwURI, e.Path)}
		}
	}
	if err := g.resourceAllowed(server, orig); err != nil {
		return nil, false, err
	}
	up := *p
	up.URI = orig
	rr, err := g.readUpstream(ctx, ss, server, &up)
	if err != nil {
		return nil, false, err
	}
	if rr == nil || len(rr.Contents) != 1 || rr.Contents[0] == nil {
		n := 0
		if rr != nil {
			n = len(rr.Contents)
		}
		return nil, true, verifyError(fmt.Errorf("%w: server %q answered the read of %s with %d contents, not one", skills.ErrVerify, server, orig, n))
	}
	c := rr.Contents[0]
	content := []byte(c.Text)
	if c.Blob != nil {
		content = c.Blob
	}
	if err := e.Verify(orig, content); err != nil {
		g.log.Warn("a skill file failed verification", "server", server, "uri", orig, "err", err)
		return nil, true, verifyError(fmt.Errorf("server %q: %w", server, err))
	}
	if orig == e.URI {
		if err := checkFrontmatter(e, content); err != nil {
			g.log.Warn("a SKILL.md failed verification", "server", server, "uri", orig, "err", err)
			return nil, true, verifyError(fmt.Errorf("server %q: %w", server, err))
		}
	}
	out := *rr
	cc := *c
	cc.URI = gwURI
	out.Contents = []*mcp.ResourceContents{&cc}
	meta := mcp.Meta{}
	for k, v := range rr.Meta {
		meta[k] = v
	}
	meta["toolsearch/server"] = server
	out.Meta = meta
	return &out, false, nil
}

// verifyError is a verification failure as the client sees it.
func verifyError(err error) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

// findSkill asks the server, by skills/get, for the skill holding orig,
// which no listed or held entry holds: the nearest folder first, at most
// maxSkillAncestors of them. Nil when none is a skill.
func (g *Gateway) findSkill(ctx context.Context, ss *mcp.ServerSession, server, orig string) *skills.Entry {
	scheme, rest, _ := strings.Cut(orig, "://")
	segs := strings.Split(rest, "/")
	var tries []string
	if segs[len(segs)-1] == skills.FileName {
		tries = append(tries, orig)
	}
	for i := len(segs) - 1; i >= 1 && len(tries) < maxSkillAncestors; i-- {
		u := scheme + "://" + strings.Join(segs[:i], "/") + "/" + skills.FileName
		if !slices.Contains(tries, u) {
			tries = append(tries, u)
		}
	}
	for _, u := range tries {
		e, err := g.fetchSkill(ctx, ss, server, u)
		if err == nil && (orig == e.URI || strings.HasPrefix(orig, e.Root+"/")) {
			return e
		}
		if ctx.Err() != nil {
			return nil
		}
	}
	return nil
}

// checkFrontmatter compares a SKILL.md's YAML frontmatter with the
// entry's: the name and the description must be the same.
func checkFrontmatter(e *skills.Entry, content []byte) error {
	text := string(content)
	text = strings.TrimPrefix(text, "\ufeff")
	body, ok := strings.CutPrefix(strings.ReplaceAll(text, "\r\n", "\n"), "---\n")
	if !ok {
		return fmt.Errorf("%w: %s has no frontmatter", skills.ErrVerify, e.URI)
	}
	end := strings.Index(body, "\n---")
	if end < 0 {
		return fmt.Errorf("%w: %s has no end to its frontmatter", skills.ErrVerify, e.URI)
	}
	if end > skills.MaxFrontmatterBytes {
		return fmt.Errorf("%w: %s has a frontmatter of over %d bytes", skills.ErrVerify, e.URI, skills.MaxFrontmatterBytes)
	}
	fm, err := skills.ReadFrontmatter(body[:end])
	if err != nil {
		return fmt.Errorf("%w: %s: its frontmatter cannot be read: %v", skills.ErrVerify, e.URI, err)
	}
	if fm.Name != e.Name || strings.TrimSpace(fm.Description) != strings.TrimSpace(e.Description) {
		return fmt.Errorf("%w: the frontmatter of %s (name %q) differs from the skill's entry (name %q): call skills/get to refresh",
			skills.ErrVerify, e.URI, fm.Name, e.Name)
	}
	return nil
}

// skillHitOut is one skill search_tools found: a reference, never the
// skill's content.
type skillHitOut struct {
	Kind        string `json:"kind"`
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Server      string `json:"server"`
}

// searchSkills runs the queries over the visible skills with the search
// engine (core/skills), best first, each skill once, at most max.
func (g *Gateway) searchSkills(ctx context.Context, query string, queries []string, max int) ([]skillHitOut, error) {
	sv := g.skillView()
	qs := make([]string, 0, 1+len(queries))
	for _, q := range append([]string{query}, queries...) {
		if q = strings.TrimSpace(q); q != "" {
			qs = append(qs, q)
		}
	}
	hits, err := sv.index.Search(ctx, qs, search.Request{MaxResults: max})
	out := make([]skillHitOut, 0, len(hits))
	for _, h := range hits {
		out = append(out, skillHitOut{Kind: "skill", URI: h.URI, Name: h.Entry.Name, Description: h.Entry.Description, Server: h.Server})
	}
	g.metrics.SkillSearch(len(out))
	return out, err
}

// skillCount is how many skills clients can see.
func (g *Gateway) skillCount() int { return len(g.skillView().list) }

// Skills returns the skills clients can see: every server's that declares
// the extension, less those policy denies, servers in key order, each
// server's in URI order, each under the gateway's URI.
func (g *Gateway) Skills() []skills.Ref {
	return slices.Clone(g.skillView().list)
}

// What search_tools finds (its kind argument).
const (
	kindTools  = "tools"
	kindSkills = "skills"
	kindBoth   = "both"
)

// searchSkillsInputSchema is search_tools' input when skills can be
// found: searchInputSchema with kind.
var searchSkillsInputSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"query":{"type":"string","description":"What the tool or skill does; or select:name1,name2, a tool or server name, a regex. +word must match."},` +
	`"queries":{"type":"array","items":{"type":"string"},"maxItems":8,"description":"Several queries, one per need, answered as one list."},` +
	`"max_results":{"type":"integer","minimum":1,"maximum":50,"description":"How many results to return, tools and skills together (default 5)."},` +
	`"kind":{"type":"string","enum":["tools","skills","both"],"description":"What to find (default both)."}}}`)

// searchToolSchema returns the search tool's description and input schema
// with what it says of skills when any is visible: for search_tools under
// search and dynamic exposure (deferred: skills/list leaves the skills
// out, search finds them) and for the bridge of the full list
// (fulllist.go), whose sessions list every skill.
func (g *Gateway) searchToolSchema(desc string, deferred bool) (string, any) {
	n := g.skillCount()
	if n == 0 {
		return desc, searchInputSchema
	}
	where := "Also finds skills"
	if deferred {
		where = "Skills are found here, not listed up front"
	}
	return desc + fmt.Sprintf(" %s (%d): kind \"skills\" or \"both\" (the default, one max_results shared, a tool and a skill in turn); "+
		"a skill found is a reference: read it with skills/get on the uri returned, then resources/read its SKILL.md and files.", where, n), searchSkillsInputSchema
}

// shareSkillHits runs the skill search of a search_tools call of kind
// both and splits max_results between the tools found (res, cut here)
// and the skills (skills.Share: a tool, then a skill, in turn). An error
// about the query leaves the skills out: the tool search said what was
// wrong.
func (g *Gateway) shareSkillHits(ctx context.Context, res *search.Result, args searchArgs, max int) []skillHitOut {
	if g.skillCount() == 0 {
		return nil
	}
	hits, err := g.searchSkills(ctx, args.Query, args.Queries, max)
	if err != nil && len(hits) == 0 {
		return nil
	}
	nt, ns := skills.Share(len(res.Hits), len(hits), max)
	res.Hits = res.Hits[:nt]
	return hits[:ns]
}

// skillsOnlyResult answers a search_tools call of kind skills; under
// dynamic exposure the skills found join the session's skills/list.
func (s *session) skillsOnlyResult(ctx context.Context, args searchArgs, max int) *mcp.CallToolResult {
	g := s.g
	hits, err := g.searchSkills(ctx, args.Query, args.Queries, max)
	s.loadSkills(hits)
	if err != nil {
		if errors.Is(err, search.ErrBadQuery) {
			return toolError("%v", err)
		}
		return toolError("search failed: %v", err)
	}
	out := searchOutput{Query: args.Query, Queries: args.Queries, Matched: kindSkills, Total: len(hits), Tools: []searchToolOut{}, Skills: hits}
	switch {
	case g.skillCount() == 0:
		out.Note = "No server offers skills."
	case len(hits) == 0:
		out.Note = "No skill matched. Try other words, or a server name."
	default:
		out.Note = skillsNote
	}
	b, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		return toolError("encoding the result: %v", err)
	}
	return textResult(string(b))
}

// skillsNote tells the model what to do with the skills it found.
const skillsNote = "Skills found are references: read one with skills/get on its uri (it gives the skill's files), then resources/read its SKILL.md."

// skillsExtensionSettings is what the gateway declares of the extension:
// skills/list, skills/get and resources/directory/read.
func skillsExtensionSettings() map[string]any { return map[string]any{"directoryRead": true} }

// A server's own URIs of its skill files (skill://pdf-forms/SKILL.md) are
// not served as they are: two servers may both have one, and a read by
// such a URI would reach the server without the checks against the
// skill's manifest. Their resources and templates are listed under the
// gateway's URIs (gatewayURI, gatewayTemplate), which reads route through
// readSkillFile, and a read by a server's own skill URI is refused with an
// error that names the gateway's URI to read instead (nativeSkillRead).

// servesURI reports whether m lists uri as a resource or has a template
// it expands.
func servesURI(m *upstream.Manifest, uri string) bool {
	if m == nil {
		return false
	}
	for _, r := range m.Resources {
		if r != nil && r.URI == uri {
			return true
		}
	}
	for _, t := range m.Templates {
		if t != nil && templateMatches(t.URITemplate, uri) {
			return true
		}
	}
	return false
}

// nativeSkillRead refuses a read of a server's own URI of a skill file:
// of server's, or, with server "", of any server that declares the
// extension. The error names the gateway's URIs to read instead.
func (g *Gateway) nativeSkillRead(server, uri string) error {
	sv := g.skillView()
	var instead []string
	// With the server unknown: the servers with a skill holding uri; else
	// those serving it (a resource listed, a template matching).
	v := g.cur.Load()
	for _, owns := range []func(k string) bool{
		func(k string) bool { return server == k || server == "" && sv.inSkill(k, uri) },
		func(k string) bool { return server == "" && servesURI(v.extras[k], uri) },
	} {
		for _, k := range sortedKeys(sv.declared) {
			if gw, ok := sv.gatewayURI(k, uri); ok && owns(k) {
				instead = append(instead, fmt.Sprintf("%s (server %s)", gw, k))
			}
		}
		if len(instead) > 0 {
			break
		}
	}
	if len(instead) == 0 {
		return nil
	}
	return invalidParams("%.300s is a skill file under a server's own URI, which this gateway does not serve unchecked: read %s, "+
		"checked against the skill's manifest (skills/list and skills/get give these URIs)", uri, strings.Join(instead, " or "))
}

// resources/directory/read (the extension's optional method). The gateway
// serves it for the directories of its skill URIs: inside a skill whose
// entry lists its files, from that manifest (the entry skills/get last
// fetched, else the listed one), which is what a client may read there;
// above the skills (skill://beta/acme), from the skills listed, each
// folder on the way to a skill a directory. A directory of a "dynamic"
// skill, whose entry lists nothing, is asked of the owning server when it
// declares directoryRead, its children's URIs made the gateway's; else
// the read fails (-32602), as for a URI that is no directory.

const methodDirectoryRead = "resources/directory/read"

// directoryPageSize is the children a page of resources/directory/read
// gives.
const directoryPageSize = 100

// directoryReadParams are resources/directory/read's params.
type directoryReadParams struct {
	mcp.ParamsBase
	URI    string `json:"uri"`
	Cursor string `json:"cursor,omitempty"`
}

// directoryReadResult is resources/directory/read's result.
type directoryReadResult struct {
	mcp.ResultBase
	ResultType string          `json:"resultType,omitempty"`
	Resources  []*mcp.Resource `json:"resources"`
	NextCursor string          `json:"nextCursor,omitempty"`
}

// mimeDirectory is the MIME type of a directory resource.
const mimeDirectory = "inode/directory"

// declaresDirectoryRead reports whether a server's capabilities declare
// the extension with directoryRead.
func declaresDirectoryRead(caps *mcp.ServerCapabilities) bool {
	if !declaresSkills(caps) {
		return false
	}
	m, _ := caps.Extensions[skills.ExtensionID].(map[string]any)
	v, _ := m["directoryRead"].(bool)
	return v
}

// readDirectoryFor answers a client's resources/directory/read.
func (g *Gateway) readDirectoryFor(ctx context.Context, ss *mcp.ServerSession, p *directoryReadParams) (*directoryReadResult, error) {
	if p == nil || p.URI == "" {
		return nil, invalidParams("resources/directory/read needs the uri of a directory")
	}
	server, orig, ok := g.skillOwner(p.URI)
	if !ok {
		return nil, invalidParams("%.300s is not a directory this gateway serves: directories are those of the skill URIs skills/list gives", p.URI)
	}
	scheme, rest, _ := strings.Cut(orig, "://")
	if err := skills.CheckPath(rest); err != nil {
		return nil, invalidParams("%.300s is not a directory: %v", p.URI, err)
	}
	sv := g.skillView()
	var children []*mcp.Resource
	if e := g.heldSkill(sv, server, orig+"/"); e != nil {
		if v := g.viewPolicy().DecideSkill(server, e.Path); v.Decision == policy.Deny {
			return nil, invalidParams("skill %s of server %q is not available: policy denies it (%s)", e.Path, server, v.Reason())
		}
		if e.Dynamic {
			return g.forwardDirectoryRead(ctx, ss, server, orig, p)
		}
		children = manifestChildren(e, orig)
	} else {
		children = namespaceChildren(sv, server, scheme, orig)
	}
	if len(children) == 0 {
		return nil, invalidParams("%.300s is not a directory resource of a skill", p.URI)
	}
	for _, c := range children {
		if q, err := skills.Qualify(server, c.URI); err == nil {
			c.URI = q
		}
	}
	from := 0
	if p.Cursor != "" {
		n, err := strconv.Atoi(p.Cursor)
		if err != nil || n < 0 || n > len(children) {
			return nil, invalidParams("resources/directory/read: cursor %.40q is not one this gateway gave", p.Cursor)
		}
		from = n
	}
	to := min(len(children), from+directoryPageSize)
	res := &directoryReadResult{ResultType: "complete", Resources: children[from:to]}
	if to < len(children) {
		res.NextCursor = strconv.Itoa(to)
	}
	return res, nil
}

// manifestChildren are the direct children of dir, a directory of skill
// e, by e's manifest: its files, and a directory for each folder holding
// more, in URI order.
func manifestChildren(e *skills.Entry, dir string) []*mcp.Resource {
	var out []*mcp.Resource
	dirs := map[string]bool{}
	for _, f := range e.Files {
		rel, ok := strings.CutPrefix(f.URI, dir+"/")
		if !ok || rel == "" {
			continue
		}
		name, deeper, more := strings.Cut(rel, "/")
		switch {
		case more && deeper != "" && !dirs[name]:
			dirs[name] = true
			out = append(out, &mcp.Resource{URI: dir + "/" + name, Name: name, MIMEType: mimeDirectory})
		case !more:
			out = append(out, &mcp.Resource{URI: f.URI, Name: name, MIMEType: fileMIME(name), Size: f.Size})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].URI < out[j].URI })
	return out
}

// namespaceChildren are the direct children of dir, a folder above
// server's visible skills: a directory for each folder on the way to one.
func namespaceChildren(sv *skillView, server, scheme, dir string) []*mcp.Resource {
	var out []*mcp.Resource
	seen := map[string]bool{}
	for _, r := range sv.list {
		if r.Server != server || !strings.HasPrefix(r.Entry.URI, scheme+"://") {
			continue
		}
		rel, ok := strings.CutPrefix(r.Entry.Root, dir+"/")
		if !ok || rel == "" {
			continue
		}
		name, _, _ := strings.Cut(rel, "/")
		if !seen[name] {
			seen[name] = true
			out = append(out, &mcp.Resource{URI: dir + "/" + name, Name: name, MIMEType: mimeDirectory})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].URI < out[j].URI })
	return out
}

// fileMIME is the MIME type of a skill file by its name's extension, ""
// when it is not known.
func fileMIME(name string) string {
	ext := ""
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		ext = strings.ToLower(name[i:])
	}
	switch ext {
	case ".md":
		return "text/markdown"
	case "":
		return ""
	}
	return mime.TypeByExtension(ext)
}

// forwardDirectoryRead asks the owning server, when it declares
// directoryRead, for a directory of a dynamic skill, and gives its
// children the gateway's URIs.
func (g *Gateway) forwardDirectoryRead(ctx context.Context, ss *mcp.ServerSession, server, orig string, p *directoryReadParams) (*directoryReadResult, error) {
	m := g.cur.Load().extras[server]
	if m == nil || !declaresDirectoryRead(m.Capabilities) {
		return nil, invalidParams("%.300s is a directory of a dynamic skill, whose entry lists no files, and server %q does not serve directory reads", p.URI, server)
	}
	u := g.ups()[server]
	if u == nil {
		return nil, invalidParams("server %q is not configured", server)
	}
	res, err := onUpstream(ctx, g, ss, u, func(ctx context.Context, cs *mcp.ClientSession) (*directoryReadResult, error) {
		return mcp.CallCustomMethod[*directoryReadParams, *directoryReadResult](ctx, cs, methodDirectoryRead, &directoryReadParams{URI: orig, Cursor: p.Cursor})
	})
	if err != nil {
		return nil, fmt.Errorf("resources/directory/read of server %q: %w", server, err)
	}
	out := &directoryReadResult{ResultType: "complete", NextCursor: res.NextCursor}
	for _, c := range res.Resources {
		if c == nil || !strings.HasPrefix(c.URI, orig+"/") {
			continue // not a child of the directory asked for
		}
		cc := *c
		q, err := skills.Qualify(server, c.URI)
		if err != nil {
			continue
		}
		cc.URI = q
		out.Resources = append(out.Resources, &cc)
	}
	if out.Resources == nil {
		out.Resources = []*mcp.Resource{}
	}
	return out, nil
}
