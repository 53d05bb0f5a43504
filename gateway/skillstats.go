package gateway

// What clients can see of skills and what they did with them, as
// /metrics, the dashboard and `toolsearch tools` report it beside the
// tools: the skills skills/list gives, what a client's first skills/list
// costs in tokens, the bytes of their files (held back until read, as
// deferred tools' definitions are until searched), the skills clients
// fetched with skills/get and the files they read.

import (
	"sync"

	"github.com/toolsearch/toolsearch/gateway/metrics"
)

// SkillStats is what clients can see of skills and what they did with
// them since the gateway started.
type SkillStats struct {
	// Skills is how many skills clients can see; Tokens the o200k size of
	// their entries as skills/list serves them (every page), ListTokens
	// that of a client's first skills/list page.
	Skills     int
	Tokens     int
	ListTokens int
	// FileBytes is the sum of the sizes of their files, by the manifests.
	FileBytes int64
	// Fetched counts the skills/get calls answered, FilesRead the skill
	// files served (verified), Refused the reads that failed verification.
	Fetched, FilesRead, Refused int64
	// Servers are the same per server that declares the extension, in
	// key order.
	Servers []ServerSkillStats
}

// ServerSkillStats is SkillStats for one server.
type ServerSkillStats struct {
	Server                      string
	Skills, Tokens              int
	FileBytes                   int64
	Fetched, FilesRead, Refused int64
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

// skillFetched counts a client's skills/get of a server's skill.
func (g *Gateway) skillFetched(server string, err error) {
	g.metrics.SkillFetched(err)
	if err == nil {
		g.skills.use.count(server, func(c *skillUse) { c.fetched++ })
		g.feedServers()
	}
}

// skillRead counts a client's read of a server's skill file.
func (g *Gateway) skillRead(server, outcome string) {
	g.metrics.SkillRead(outcome)
	switch outcome {
	case metrics.SkillReadVerified:
		g.skills.use.count(server, func(c *skillUse) { c.read++ })
	case metrics.SkillReadRefused:
		g.skills.use.count(server, func(c *skillUse) { c.refused++ })
	default:
		return
	}
	g.feedServers()
}

// SkillStats returns what clients can see of skills and what they did
// with them.
func (g *Gateway) SkillStats() SkillStats {
	sv := g.skillView()
	st := SkillStats{Skills: len(sv.list), ListTokens: sv.tokens}
	byServer := map[string]*ServerSkillStats{}
	for _, k := range sortedKeys(sv.declared) {
		u := g.skills.use.get(k)
		st.Servers = append(st.Servers, ServerSkillStats{Server: k, Fetched: u.fetched, FilesRead: u.read, Refused: u.refused})
	}
	for i := range st.Servers {
		byServer[st.Servers[i].Server] = &st.Servers[i]
	}
	tokens := sv.entryTokens()
	for i, r := range sv.list {
		s := byServer[r.Server]
		if s == nil {
			continue
		}
		s.Skills++
		s.Tokens += tokens[i]
		s.FileBytes += r.Bytes()
	}
	for _, s := range st.Servers {
		st.Tokens += s.Tokens
		st.FileBytes += s.FileBytes
		st.Fetched += s.Fetched
		st.FilesRead += s.FilesRead
		st.Refused += s.Refused
	}
	return st
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

// addSkillViews lists each server's visible skills in its view, at most
// maxListedTools a server.
func (g *Gateway) addSkillViews(out []ServerView) {
	sv := g.skillView()
	if len(sv.list) == 0 {
		return
	}
	at := make(map[string]int, len(out))
	for i := range out {
		at[out[i].Key] = i
	}
	for _, r := range sv.list {
		i, ok := at[r.Server]
		if !ok || len(out[i].SkillList) == maxListedTools {
			continue
		}
		out[i].SkillList = append(out[i].SkillList, SkillView{Name: r.Entry.Name, URI: r.URI, Description: excerpt(r.Entry.Description)})
	}
}
