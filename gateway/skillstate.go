package gateway

// What the gateway holds of its servers' skills (skills.go): the skills
// parsed from each server, the published skill view clients search and
// read, and what clients did with each server's skills (skillstats.go).

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/toolsearch/toolsearch/core/policy"
	"github.com/toolsearch/toolsearch/core/skills"
)

// serverSkills are one server's parsed skills, with the slice they were
// parsed from.
type serverSkills struct {
	from    *json.RawMessage // first element of the manifest's Skills
	n       int
	entries []*skills.Entry
}

// skillView is what clients see of skills for one view and policy.
type skillView struct {
	from *view
	pol  *policy.Policy
	// list is every visible skill, servers in key order, each server's
	// in URI order.
	list []skills.Ref
	// always are those of list whose server is configured with
	// alwaysLoad: what skills/list gives a session that defers skills.
	always []skills.Ref
	byURI  map[string]skills.Ref // gateway URI → skill
	// declared are the servers that declare the extension.
	declared map[string]bool
	// denied are, per server, the entries policy denies.
	denied map[string][]*skills.Entry
	index  *skills.Index
	// tokens is what a client's first skills/list costs (o200k).
	tokens int
	// entryTok is each skill's entry's tokens (entryTokens).
	tokOnce  sync.Once
	entryTok []int
	tokByURI map[string]int
}

// skillState is the gateway's skills: the view for the current catalog
// and policy, the parsed skills per server, and the entries skills/get
// fetched.
type skillState struct {
	mu     sync.Mutex
	cur    *skillView
	parsed map[string]*serverSkills
	held   map[string]map[string]*skills.Entry // server → SKILL.md URI → entry
	nHeld  int
	// use counts what clients did with each server's skills
	// (skillstats.go).
	use skillUses
}

// found returns the skills of uris that are visible and not of an
// always-load server (those are listed already), in the order of uris.
func (sv *skillView) found(uris []string) []skills.Ref {
	var out []skills.Ref
	for _, u := range uris {
		r, ok := sv.byURI[u]
		if ok && !slices.ContainsFunc(sv.always, func(a skills.Ref) bool { return a.URI == u }) {
			out = append(out, r)
		}
	}
	return out
}

// isSkillResource reports whether uri, a resource of server (which
// declares the extension), is a skill file: a skill:// URI, or one inside
// the folder of one of its skills (visible or denied).
func (sv *skillView) isSkillResource(server, uri string) bool {
	return strings.HasPrefix(uri, skills.Scheme+"://") || sv.inSkill(server, uri)
}

// inSkill reports whether uri lies inside the folder of one of server's
// skills (visible or denied).
func (sv *skillView) inSkill(server, uri string) bool {
	inside := func(e *skills.Entry) bool { return uri == e.URI || strings.HasPrefix(uri, e.Root+"/") }
	for _, r := range sv.list {
		if r.Server == server && inside(r.Entry) {
			return true
		}
	}
	return slices.ContainsFunc(sv.denied[server], inside)
}

// gatewayURI returns the gateway's URI of a server's resource when it is
// a skill file of a server that declares the extension.
func (sv *skillView) gatewayURI(server, uri string) (string, bool) {
	if !sv.declared[server] || !sv.isSkillResource(server, uri) {
		return "", false
	}
	q, err := skills.Qualify(server, uri)
	return q, err == nil
}

// gatewayTemplate returns the gateway's form of a server's resource
// template under skill:// (the TypeScript SDK lists skill://{+path}) when
// the server declares the extension: skill://<server>/{+path}, whose
// expansions are the gateway's URIs of the server's skill files.
func (sv *skillView) gatewayTemplate(server, tmpl string) (string, bool) {
	if !sv.declared[server] || !strings.HasPrefix(tmpl, skills.Scheme+"://") {
		return "", false
	}
	q, err := skills.Qualify(server, tmpl)
	return q, err == nil
}

// skillUse counts what clients did with one server's skills.
type skillUse struct {
	fetched, read, refused int64
}

// skillUses are the counts per server.
type skillUses struct {
	mu sync.Mutex
	m  map[string]*skillUse
}

// count adds to the server's counts.
func (u *skillUses) count(server string, add func(*skillUse)) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m = map[string]*skillUse{}
	}
	c := u.m[server]
	if c == nil {
		c = &skillUse{}
		u.m[server] = c
	}
	add(c)
}

func (u *skillUses) get(server string) skillUse {
	u.mu.Lock()
	defer u.mu.Unlock()
	if c := u.m[server]; c != nil {
		return *c
	}
	return skillUse{}
}

// entryTokens returns the o200k size of each visible skill's entry,
// worked out once per view.
func (sv *skillView) entryTokens() []int {
	sv.tokOnce.Do(func() {
		sv.entryTok = make([]int, len(sv.list))
		sv.tokByURI = make(map[string]int, len(sv.list))
		for i, r := range sv.list {
			sv.entryTok[i] = r.Tokens()
			sv.tokByURI[r.URI] = sv.entryTok[i]
		}
	})
	return sv.entryTok
}

// listTokens is the o200k size of the entries a session's skills/list
// gives over every page (skillsListing says which): every visible skill,
// or with deferred set, those of always-load servers and the found ones.
func (sv *skillView) listTokens(deferred bool, found []string) int {
	sv.entryTokens()
	n := 0
	if !deferred {
		for _, t := range sv.entryTok {
			n += t
		}
		return n
	}
	for _, r := range sv.always {
		n += sv.tokByURI[r.URI]
	}
	for _, r := range sv.found(found) {
		n += sv.tokByURI[r.URI]
	}
	return n
}
