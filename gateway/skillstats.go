package gateway

// What clients can see of skills and what they did with them, as
// /metrics, the dashboard and `toolsearch tools` report it beside the
// tools: the skills skills/list gives, what a client's first skills/list
// costs in tokens, the bytes of their files (held back until read, as
// deferred tools' definitions are until searched), the skills clients
// fetched with skills/get and the files they read.

import (
	"github.com/toolsearch/toolsearch/gateway/metrics"
)

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
