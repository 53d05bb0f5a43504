package gateway

// The gateway's hooks into its event feed (feed.go): each builds an event
// and hands it to the Feed. A gateway without a Feed builds no event and
// takes no lock for one: every hook starts with g.feed == nil.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/search"
	"github.com/toolsearch/toolsearch/gateway/clientera"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/gateway/upstream"
)

// uiHandler serves the dashboard's pages at /ui (Options.UI).
func (g *Gateway) uiHandler(mux *http.ServeMux) {
	if g.ui == nil {
		return
	}
	mux.Handle("/ui", g.ui)
	mux.Handle("/ui/", g.ui)
}

// feedSearch tells the feed of a search.
func (s *session) feedSearch(req mcp.Request, args searchArgs, res search.Result, err error, start time.Time) {
	g := s.g
	ev := SearchEvent{Time: time.Now(), Query: clip(args.Query, MaxFeedQuery),
		Queries: clipAll(args.Queries, MaxFeedQuery, MaxFeedQueries), Duration: time.Since(start)}
	ev.Session, ev.Client = s.feedClientID(req)
	if err != nil {
		ev.Error = clip(err.Error(), MaxFeedQuery)
	}
	if err == nil {
		v := g.cur.Load()
		ev.Form, ev.Total = string(res.Form), res.Total
		for _, h := range res.Hits {
			if len(ev.Results) == MaxFeedNames {
				break
			}
			ev.Results = append(ev.Results, clip(v.names.toolName(h.Tool), MaxFeedName))
		}
	}
	g.feed.Searched(ev)
}

// feedLoadedOut tells the feed of the definitions a search gave the
// client: in dynamic exposure the tools found join its tool list, in the
// others the result carries the schemas of those in out.Tools.
func (s *session) feedLoadedOut(mode string, found []*catalog.Tool, out []searchToolOut) {
	ev := LoadEvent{Time: time.Now(), How: "schemas"}
	if mode == config.ExposureDynamic {
		ev.How = "tool list"
		v := s.g.cur.Load()
		for _, t := range found {
			ev.Tools = append(ev.Tools, v.names.toolName(t))
		}
	} else {
		for _, t := range out {
			ev.Tools = append(ev.Tools, t.Name)
		}
	}
	ev.Tools = clipAll(ev.Tools, MaxFeedName, MaxFeedNames)
	if len(ev.Tools) == 0 {
		return
	}
	ev.Session, _ = s.feedID()
	s.g.feed.Loaded(ev)
}

// feedCall tells the feed how c ended (recordCall, outcome.go).
func (s *session) feedCall(c *toolCall, o callOutcome, took time.Duration) {
	g := s.g
	// The name is the client's, checked or not.
	ev := CallEvent{Time: time.Now(), Tool: clip(c.asked, MaxFeedName), Duration: took, Outcome: "ok", Server: c.to.server}
	ev.Session, ev.Client = s.feedClientID(c.req)
	res, err := o.res, o.err
	switch {
	case err != nil:
		ev.Outcome = "error"
	case res == nil:
	case res.NeedsInput() || res.InputRequests != nil:
		ev.Outcome = "input_required"
	case res.IsError:
		ev.Outcome = "tool_error"
	}
	if g.cfg.Gateway.Dashboard.RecordArguments {
		ev.Arguments = g.recorded(string(orEmpty(c.args)))
		switch {
		case err != nil:
			ev.Result = g.recorded(err.Error())
		case res != nil:
			if b, merr := json.Marshal(res); merr == nil {
				ev.Result = g.recorded(string(b))
			}
		}
	}
	g.feed.Called(ev)
}

// recorded is s as a CallEvent keeps it: secrets replaced, cut short.
func (g *Gateway) recorded(s string) string {
	s = g.Redact(s)
	if len(s) > maxRecorded {
		s = strings.ToValidUTF8(s[:maxRecorded], "") + "…"
	}
	return s
}

// feedID is how the feed names the session and its client.
func (s *session) feedID() (id, client string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.feedIDLocked()
}

func (s *session) feedIDLocked() (id, client string) {
	id = fmt.Sprint(s.seq)
	if s.shared {
		return id, sharedClients(s.mode)
	}
	return id, clip(s.client, MaxFeedName)
}

// sharedClients is how the feed names the clients of a shared server
// whose request did not name its own.
func sharedClients(mode string) string { return "clients of MCP 2026-07-28 (" + mode + ")" }

// feedClientID is feedID for one request: a shared server's request
// names its own client in its _meta (self-reported, shown only).
func (s *session) feedClientID(req mcp.Request) (id, client string) {
	id, client = s.feedID()
	if s.shared {
		if c := clientera.MetaClient(clientera.Meta(req)); c != "" {
			client = clip(c, MaxFeedName)
		}
	}
	return id, client
}

// feedSession tells the feed of the session's state. s.mu is held.
func (s *session) feedSession(v *view, closed bool) {
	if !s.shared && s.ss == nil {
		return // not initialized yet
	}
	ev := SessionEvent{Time: time.Now(), Protocol: clip(s.era, MaxFeedName), Shared: s.shared, Exposure: s.mode, Why: s.reason,
		Closed: closed, FullTokens: s.g.visibleTokens(v), SentTokens: s.loadedTok}
	if s.mode == config.ExposureFull {
		ev.ClientDefers = s.facts.DefersTools()
		ev.ClientTokens = s.g.clientDeferredTokens(v)
	}
	ev.Session, ev.Client = s.feedIDLocked()
	s.g.feed.SessionChanged(ev)
}

// clientDeferredTokens estimates what the model of a client that defers
// MCP tools itself is shown of the full list of v: the always-loaded
// tools whole, and of every other tool one line with its name.
func (g *Gateway) clientDeferredTokens(v *view) int {
	n := 0
	for _, t := range v.snap.Tools() {
		switch {
		case !v.names.visible(t):
		case t.AlwaysLoad:
			n += t.Tokens()
		default:
			n += catalog.CountTokens(v.names.toolName(t) + "\n")
		}
	}
	return n
}

// feedClient tells a ClientFeed of a request of a 2026-07-28 client
// served by the shared server s.
func (s *session) feedClient(version string, meta map[string]any) {
	cf, ok := s.g.feed.(ClientFeed)
	if !ok {
		return
	}
	id, _ := s.feedID()
	facts := clientera.FromMeta(meta)
	cf.ClientSeen(ClientEvent{Time: time.Now(), Session: id, Client: clip(clientera.MetaClient(meta), MaxFeedName),
		Protocol: clip(version, MaxFeedName), Defers: facts.DefersTools()})
}

// feedClosed tells the feed a session ended.
func (s *session) feedClosed() {
	if s.g.feed == nil {
		return
	}
	v := s.g.cur.Load()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.feedSession(v, true)
}

// feedServers tells the feed the state of every upstream server, from a
// goroutine of its own that runs while changes are waiting: the first
// change is told at once, and the changes that come within feedEvery of a
// state told are told together in the next. A start of many servers thus
// costs a few states a second, not one per change (each lists every
// server's tools), and a caller never waits for one to be built. A change
// never arrives before one it follows: one goroutine at a time builds
// them, each from the gateway's state when it begins.
func (g *Gateway) feedServers() {
	if g.feed == nil {
		return
	}
	g.feedDirty.Store(true)
	if g.feedRunning.CompareAndSwap(false, true) {
		go g.feedLoop()
	}
}

// feedEvery is the shortest time between two server states told to the
// feed.
const feedEvery = 100 * time.Millisecond

// feedLoop tells the server states while changes are waiting, at most one
// every feedEvery. Only the goroutine that set feedRunning runs it.
func (g *Gateway) feedLoop() {
	for {
		g.feedMu.Lock()
		if wait := feedEvery - time.Since(g.feedLast); wait > 0 {
			time.Sleep(wait)
		}
		if g.feedDirty.Swap(false) {
			g.tellServers()
			g.feedLast = time.Now()
		}
		g.feedMu.Unlock()
		g.feedRunning.Store(false)
		// A change stored after the Swap saw the loop running and
		// started none: look again.
		if !g.feedDirty.Load() || !g.feedRunning.CompareAndSwap(false, true) {
			return
		}
	}
}

// tellServers builds the state of every upstream server and tells the
// feed. g.feedMu is held.
func (g *Gateway) tellServers() {
	mode, why := g.resolveMode(g.cfg.Gateway.Exposure)
	v := g.cur.Load()
	ups := g.ups()
	excerpts := make(map[*catalog.Tool]string, len(g.feedExcerpts))
	var out []ServerView
	for _, st := range g.Statuses() {
		sv := ServerView{Status: st}
		u := ups[st.Key]
		if u != nil && u.Stderr() != nil {
			lines := strings.Split(u.Stderr().String(), "\n")
			if len(lines) > stderrLines {
				lines = lines[len(lines)-stderrLines:]
			}
			sv.Stderr = g.Redact(strings.Join(lines, "\n"))
		}
		sv.Deferral, sv.DeferralWhy = deferralOf(u, v, mode, why)
		if srv, ok := v.snap.Server(st.Key); ok {
			for _, t := range srv.Tools {
				if len(sv.ToolList) == maxListedTools {
					break
				}
				if v.names.visible(t) {
					// A tool's description never changes: its excerpt
					// is made once, kept while the tool is listed.
					ex, ok := g.feedExcerpts[t]
					if !ok {
						ex = excerpt(t.Description)
					}
					excerpts[t] = ex
					sv.ToolList = append(sv.ToolList, ToolView{Name: v.names.toolName(t), Description: ex})
				}
			}
		}
		out = append(out, sv)
	}
	g.feedExcerpts = excerpts
	g.addSkillViews(out) // skillstats.go
	g.feed.ServersChanged(out)
	if sf, ok := g.feed.(SkillFeed); ok {
		sf.SkillsChanged(g.SkillStats())
	}
	g.enr.Feed() // the tools with hints may have changed (package enrichment)
}

// deferralOf says whether a server's tools are deferred, and why, under
// the configured exposure as a client without a rule of its own gets it.
func deferralOf(u *upstream.Server, v *view, mode, why string) (string, string) {
	if u != nil && u.Config().AlwaysLoad {
		return "always loaded", "the server is configured with alwaysLoad: its tools are in every tool list"
	}
	if u != nil {
		if srv, ok := v.snap.Server(u.Key()); ok && len(srv.Tools) > 0 && allAlwaysLoad(srv.Tools) {
			return "always loaded", "every tool of the server asks to be always loaded (" + catalog.MetaAlwaysLoad + ")"
		}
	}
	if mode == config.ExposureFull {
		return "listed", "exposure full: " + why
	}
	return "deferred", "exposure " + mode + ": " + why
}

// excerpt is the start of a description, on one line: at most
// excerptRunes runes, its white space runs made single spaces. It reads
// only as much of s as it keeps.
func excerpt(s string) string {
	var b []byte
	runes := 0
	for f := range strings.FieldsSeq(s) {
		if runes > 0 {
			b = append(b, ' ')
			runes++
		}
		b = append(b, f...)
		if runes += utf8.RuneCountInString(f); runes > excerptRunes {
			// As many runes as kept, each byte that is not UTF-8 one
			// U+FFFD, as a conversion of the whole would give.
			return string([]rune(string(b))[:excerptRunes]) + "…"
		}
	}
	return string(b)
}

const excerptRunes = 240

func allAlwaysLoad(tools []*catalog.Tool) bool {
	for _, t := range tools {
		if !t.AlwaysLoad {
			return false
		}
	}
	return true
}
