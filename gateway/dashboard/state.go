package dashboard

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/toolsearch/toolsearch/gateway"
)

// State is what the pages show, as /ui/api/state answers it.
type State struct {
	// Seq moves at every change; the event stream sends it.
	Seq             uint64    `json:"seq"`
	Now             time.Time `json:"now"`
	Keep            int       `json:"keep"`
	Retention       string    `json:"retention"`
	RecordArguments bool      `json:"recordArguments"`
	Servers         []Server  `json:"servers"`
	Sessions        []Session `json:"sessions"`
	// Searches are newest first; Misses are the queries that led to no
	// call, most frequent first; Calls the calls no search led to.
	Searches []Search `json:"searches"`
	Misses   []Miss   `json:"misses"`
	Calls    []Call   `json:"calls"`
	Economy  Economy  `json:"economy"`
	// Enrich is background enrichment, nil when it is off.
	Enrich *Enrich `json:"enrich,omitempty"`
	// Skills are the servers' skills, nil when no server declares them.
	Skills *Skills `json:"skills,omitempty"`
}

// Skills is what clients can see of the servers' skills and what they
// did with them since the gateway started: the skills skills/list gives,
// the tokens of their entries (every page, and a client's first page),
// the bytes of their files (held back until read), the skills/get calls
// answered, the files served (verified) and those refused.
type Skills struct {
	Skills     int   `json:"skills"`
	Tokens     int   `json:"tokens"`
	ListTokens int   `json:"listTokens"`
	FileBytes  int64 `json:"fileBytes"`
	Fetched    int64 `json:"fetched"`
	FilesRead  int64 `json:"filesRead"`
	Refused    int64 `json:"refused"`
	// Servers are the same per server that declares the extension.
	Servers []ServerSkills `json:"servers"`
}

// ServerSkills is Skills for one server.
type ServerSkills struct {
	Server    string `json:"server"`
	Skills    int    `json:"skills"`
	Tokens    int    `json:"tokens"`
	FileBytes int64  `json:"fileBytes"`
	Fetched   int64  `json:"fetched"`
	FilesRead int64  `json:"filesRead"`
	Refused   int64  `json:"refused"`
}

// skillsOf is what the pages show of st; nil when no server declares
// skills.
func skillsOf(st gateway.SkillStats) *Skills {
	if len(st.Servers) == 0 {
		return nil
	}
	sk := &Skills{Skills: st.Skills, Tokens: st.Tokens, ListTokens: st.ListTokens, FileBytes: st.FileBytes,
		Fetched: st.Fetched, FilesRead: st.FilesRead, Refused: st.Refused, Servers: make([]ServerSkills, 0, len(st.Servers))}
	for _, s := range st.Servers {
		sk.Servers = append(sk.Servers, ServerSkills{Server: s.Server, Skills: s.Skills, Tokens: s.Tokens, FileBytes: s.FileBytes,
			Fetched: s.Fetched, FilesRead: s.FilesRead, Refused: s.Refused})
	}
	return sk
}

// equal reports whether two states show the same.
func (s *Skills) equal(o *Skills) bool {
	return s.Skills == o.Skills && s.Tokens == o.Tokens && s.ListTokens == o.ListTokens && s.FileBytes == o.FileBytes &&
		s.Fetched == o.Fetched && s.FilesRead == o.FilesRead && s.Refused == o.Refused && slices.Equal(s.Servers, o.Servers)
}

// Enrich is background enrichment (search hints a model writes), as the
// servers page shows it: its state and why, the tools with hints, the
// day's spend against the budget and the day's outcomes, and the last
// error.
type Enrich struct {
	State     string `json:"state"`
	Reason    string `json:"reason"`
	Provider  string `json:"provider"`
	Model     string `json:"model"`
	Tools     int    `json:"tools"`
	WithHints int    `json:"withHints"`
	// Day is the UTC day of the spend.
	Day          string `json:"day"`
	SpentTools   int64  `json:"spentTools"`
	SpentTokens  int64  `json:"spentTokens"`
	BudgetTools  int64  `json:"budgetTools"`
	BudgetTokens int64  `json:"budgetTokens"`
	// Written, Rejected and Failed count the day's tools by outcome.
	Written  int64 `json:"written"`
	Rejected int64 `json:"rejected"`
	Failed   int64 `json:"failed"`
	// Done and Total are the run in progress (both 0 between runs).
	Done        int       `json:"done"`
	Total       int       `json:"total"`
	NextRun     time.Time `json:"nextRun"`
	LastError   string    `json:"lastError"`
	LastErrorAt time.Time `json:"lastErrorAt"`
}

// enrichOf is what the pages show of st.
func enrichOf(st gateway.EnrichStatus) Enrich {
	e := Enrich{State: st.State, Reason: st.Reason, Provider: st.Provider, Model: st.Model, Tools: st.Tools, WithHints: st.WithHints,
		Day: st.Day, SpentTools: st.Spent.Tools, SpentTokens: st.Spent.Tokens, BudgetTools: st.Budget.Tools, BudgetTokens: st.Budget.Tokens,
		Written: st.Today.Written, Rejected: st.Today.Rejected, Failed: st.Today.Failed, LastError: st.LastError}
	if st.Progress != nil {
		e.Done, e.Total = st.Progress.Done, st.Progress.Total
	}
	if st.NextRun != nil {
		e.NextRun = *st.NextRun
	}
	if st.LastErrorAt != nil {
		e.LastErrorAt = *st.LastErrorAt
	}
	return e
}

// Server is one upstream server.
type Server struct {
	Name        string    `json:"name"`
	Transport   string    `json:"transport"`
	State       string    `json:"state"`
	Since       time.Time `json:"since"`
	Protocol    string    `json:"protocol"`
	Tools       int       `json:"tools"`
	Tokens      int       `json:"tokens"`
	Restarts    int       `json:"restarts"`
	FromCache   bool      `json:"fromCache"`
	Deferral    string    `json:"deferral"`
	DeferralWhy string    `json:"deferralWhy"`
	Error       string    `json:"error"`
	Stderr      string    `json:"stderr"`
	ToolList    []Tool    `json:"toolList"`
	// SkillList is the server's skills clients can see (empty for a
	// server without skills).
	SkillList []Skill `json:"skillList"`
}

// Skill is one skill of a server: its name, the gateway's URI and the
// start of its description.
type Skill struct {
	Name        string `json:"name"`
	URI         string `json:"uri"`
	Description string `json:"description"`
}

// Tool is one tool of a server: the name clients see and the start of
// its description.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// Session is one client session.
type Session struct {
	ID         string     `json:"id"`
	Client     string     `json:"client"`
	Protocol   string     `json:"protocol"`
	Shared     bool       `json:"shared"`
	Exposure   string     `json:"exposure"`
	Why        string     `json:"why"`
	Open       bool       `json:"open"`
	Opened     time.Time  `json:"opened"`
	Closed     *time.Time `json:"closed,omitempty"`
	FullTokens int        `json:"fullTokens"`
	SentTokens int        `json:"sentTokens"`
	// DeferredBy says who keeps tools from the model: "gateway" (search
	// or dynamic exposure), "client" (a client that defers MCP tools
	// behind its own tool search, sent the full list) or "" (nobody).
	DeferredBy string `json:"deferredBy"`
	// ModelTokens is what the model is shown of the tool list: the
	// tokens sent, or, when the client defers, an estimate of what it
	// shows its model (the always-loaded tools whole, a line per other
	// tool's name).
	ModelTokens int `json:"modelTokens"`
	Searches    int `json:"searches"`
	Calls       int `json:"calls"`
	// Clients are the MCP 2026-07-28 clients a shared server served,
	// the latest first (empty for a session, whose client is Client).
	Clients []SeenClient `json:"clients"`
}

// SeenClient is one MCP 2026-07-28 client of a shared server, as its
// requests named it (self-reported).
type SeenClient struct {
	Client   string    `json:"client"`
	Protocol string    `json:"protocol"`
	First    time.Time `json:"first"`
	Last     time.Time `json:"last"`
	Requests int       `json:"requests"`
	// Defers says that it defers MCP tools behind its own tool search.
	Defers bool `json:"defers"`
}

// Search outcomes.
const (
	OutcomeCalled  = "called"
	OutcomeNoCall  = "no call"
	OutcomeWaiting = "waiting"
	OutcomeRefused = "refused"
)

// missAfter is how long a search with no call waits before it counts
// as a miss, when nothing else happened in its session since.
const missAfter = 2 * time.Minute

// Search is one search and what followed it.
type Search struct {
	Time       time.Time `json:"time"`
	Session    string    `json:"session"`
	Client     string    `json:"client"`
	Query      string    `json:"query"`
	Queries    []string  `json:"queries,omitempty"`
	Form       string    `json:"form"`
	Results    []string  `json:"results"`
	Total      int       `json:"total"`
	Error      string    `json:"error,omitempty"`
	DurationMS float64   `json:"durationMs"`
	Loaded     []string  `json:"loaded"`
	Called     []Call    `json:"called"`
	// Outcome is called, no call, waiting (recent, nothing after it yet
	// in its session) or refused.
	Outcome string `json:"outcome"`

	seq uint64 // the event's
}

// Call is one tool call.
type Call struct {
	Time       time.Time `json:"time"`
	Session    string    `json:"session"`
	Client     string    `json:"client"`
	Tool       string    `json:"tool"`
	Server     string    `json:"server"`
	Outcome    string    `json:"outcome"`
	DurationMS float64   `json:"durationMs"`
	// Arguments and Result are empty unless recordArguments is on.
	Arguments string `json:"arguments,omitempty"`
	Result    string `json:"result,omitempty"`
}

// Miss is a query that led to no call, with how often it was asked.
type Miss struct {
	Query   string    `json:"query"`
	Form    string    `json:"form"`
	Count   int       `json:"count"`
	Last    time.Time `json:"last"`
	Results []string  `json:"results"`
	Error   string    `json:"error,omitempty"`
}

// Economy is the context economy over time: at each change, the tokens
// the open sessions' full tool lists would have cost against what their
// lists cost.
type Economy struct {
	Points []Point `json:"points"`
	// Full, Sent and Model are the sums over the sessions shown (Model:
	// what their models are shown, see Session.ModelTokens); ByClient is
	// the part of Sent that clients deferring tools themselves kept from
	// their models.
	Full     int `json:"full"`
	Sent     int `json:"sent"`
	Model    int `json:"model"`
	ByClient int `json:"byClient"`
}

// Point is the open sessions' tokens at one time.
type Point struct {
	Time     time.Time `json:"time"`
	Full     int       `json:"full"`
	Sent     int       `json:"sent"`
	Sessions int       `json:"sessions"`
}

// maxListed bounds the searches and calls a state lists (the ring may
// keep more, for the misses and the plot).
const maxListed = 500

// State returns what the pages show now.
func (d *Dashboard) State() State {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.expire()
	now := d.opts.Now()
	st := State{Seq: d.seq, Now: now, Keep: d.opts.Keep, Retention: d.opts.Retention.String(),
		RecordArguments: d.opts.RecordArguments,
		Servers:         []Server{}, Sessions: []Session{}, Searches: []Search{}, Misses: []Miss{}, Calls: []Call{},
		Economy: Economy{Points: []Point{}}}
	for _, s := range d.servers {
		sv := Server{Name: s.Key, Transport: s.Transport, State: string(s.State), Since: s.Since,
			Protocol: s.Protocol, Tools: s.Tools, Tokens: s.Tokens, Restarts: s.Restarts, FromCache: s.FromCache,
			Deferral: s.Deferral, DeferralWhy: s.DeferralWhy, Error: s.Error, Stderr: s.Stderr, ToolList: []Tool{}}
		for _, t := range s.ToolList {
			sv.ToolList = append(sv.ToolList, Tool{Name: t.Name, Description: t.Description})
		}
		sv.SkillList = []Skill{}
		for _, k := range s.SkillList {
			sv.SkillList = append(sv.SkillList, Skill{Name: k.Name, URI: k.URI, Description: k.Description})
		}
		st.Servers = append(st.Servers, sv)
	}
	for id, r := range d.sessions {
		s := Session{ID: id, Client: r.last.Client, Protocol: r.last.Protocol, Shared: r.last.Shared,
			Exposure: r.last.Exposure, Why: r.last.Why, Open: r.closedAt.IsZero(), Opened: r.opened,
			FullTokens: r.last.FullTokens, SentTokens: r.last.SentTokens, Searches: r.searches, Calls: r.calls}
		if !s.Open {
			c := r.closedAt
			s.Closed = &c
		}
		s.Clients = seenClients(r.clients)
		s.DeferredBy, s.ModelTokens = deferredBy(r.last, s.Clients)
		st.Sessions = append(st.Sessions, s)
		st.Economy.Full += s.FullTokens
		st.Economy.Sent += s.SentTokens
		st.Economy.Model += s.ModelTokens
		st.Economy.ByClient += s.SentTokens - s.ModelTokens
	}
	slices.SortFunc(st.Sessions, func(a, b Session) int {
		return cmp.Or(cmp.Compare(b.Opened.UnixNano(), a.Opened.UnixNano()), strings.Compare(a.ID, b.ID))
	})
	if d.enrich != nil {
		e := *d.enrich
		st.Enrich = &e
	}
	if d.skills != nil {
		sk := *d.skills
		sk.Servers = slices.Clone(d.skills.Servers)
		st.Skills = &sk
	}
	d.follow(&st, now)
	return st
}

// seenClients are a shared server's clients, the latest first.
func seenClients(m map[seenKey]*seenClient) []SeenClient {
	out := make([]SeenClient, 0, len(m))
	for k, c := range m {
		out = append(out, SeenClient{Client: k.client, Protocol: k.protocol, First: c.first, Last: c.last,
			Requests: c.requests, Defers: c.defers})
	}
	slices.SortFunc(out, func(a, b SeenClient) int {
		return cmp.Or(b.Last.Compare(a.Last), strings.Compare(a.Client, b.Client), strings.Compare(a.Protocol, b.Protocol))
	})
	return out
}

// deferredBy says who keeps tools from the session's model, and what the
// model is shown. A client that defers tools itself counts in full
// exposure only (in the others the gateway sent less already); a shared
// server counts as one when every client it served does.
func deferredBy(ev gateway.SessionEvent, clients []SeenClient) (string, int) {
	byClient := ev.ClientDefers
	if ev.Shared && len(clients) > 0 {
		byClient = !slices.ContainsFunc(clients, func(c SeenClient) bool { return !c.Defers })
	}
	switch {
	case ev.Exposure != "full" && ev.SentTokens < ev.FullTokens:
		return "gateway", ev.SentTokens
	case ev.Exposure == "full" && byClient && ev.ClientTokens < ev.SentTokens:
		return "client", ev.ClientTokens
	}
	return "", ev.SentTokens
}

// follow reads the events in order: each search with the loads and calls
// that followed it in its session, the misses, and the plot's points.
func (d *Dashboard) follow(st *State, now time.Time) {
	var searches []*Search
	bySession := map[string][]*Search{} // in order
	closed := map[string]bool{}
	var calls []Call
	cur := map[string][2]int{}     // open session → full, sent
	lastAct := map[string]uint64{} // session → the seq of its latest search or call
	for _, e := range d.events.all() {
		switch {
		case e.Search != nil:
			ev := e.Search
			s := &Search{Time: ev.Time, Session: ev.Session, Client: ev.Client, Query: ev.Query, Queries: ev.Queries,
				Form: ev.Form, Results: orNone(ev.Results), Total: ev.Total, Error: ev.Error,
				DurationMS: ms(ev.Duration), Loaded: []string{}, Called: []Call{}, seq: e.Seq}
			lastAct[ev.Session] = e.Seq
			searches = append(searches, s)
			bySession[ev.Session] = append(bySession[ev.Session], s)
		case e.Load != nil:
			if ss := bySession[e.Load.Session]; len(ss) > 0 {
				last := ss[len(ss)-1]
				last.Loaded = append(last.Loaded, e.Load.Tools...)
			}
		case e.Call != nil:
			ev := e.Call
			c := Call{Time: ev.Time, Session: ev.Session, Client: ev.Client, Tool: ev.Tool, Server: ev.Server, Outcome: ev.Outcome,
				DurationMS: ms(ev.Duration), Arguments: ev.Arguments, Result: ev.Result}
			lastAct[ev.Session] = e.Seq
			if s := ledTo(bySession[ev.Session], ev.Tool); s != nil {
				s.Called = append(s.Called, c)
			} else {
				calls = append(calls, c)
			}
		case e.Session != nil:
			ev := e.Session
			if ev.Closed {
				closed[ev.Session] = true
				delete(cur, ev.Session)
			} else {
				cur[ev.Session] = [2]int{ev.FullTokens, ev.SentTokens}
			}
			p := Point{Time: ev.Time, Sessions: len(cur)}
			for _, v := range cur {
				p.Full += v[0]
				p.Sent += v[1]
			}
			st.Economy.Points = append(st.Economy.Points, p)
		}
	}
	misses := map[string]*Miss{}
	for id, ss := range bySession {
		for _, s := range ss {
			switch {
			case s.Error != "":
				s.Outcome = OutcomeRefused
			case len(s.Called) > 0:
				s.Outcome = OutcomeCalled
			case lastAct[id] > s.seq || closed[id] || now.Sub(s.Time) >= missAfter || d.sessionClosed(id):
				s.Outcome = OutcomeNoCall
			default:
				s.Outcome = OutcomeWaiting
			}
			if s.Outcome != OutcomeNoCall && s.Outcome != OutcomeRefused {
				continue
			}
			q := queryText(s)
			key := strings.ToLower(strings.Join(strings.Fields(q), " "))
			m := misses[key]
			if m == nil {
				m = &Miss{Query: q}
				misses[key] = m
			}
			m.Count++
			if !s.Time.Before(m.Last) {
				m.Last, m.Form, m.Results, m.Error = s.Time, s.Form, s.Results, s.Error
			}
		}
	}
	for _, m := range misses {
		st.Misses = append(st.Misses, *m)
	}
	slices.SortFunc(st.Misses, func(a, b Miss) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), b.Last.Compare(a.Last), strings.Compare(a.Query, b.Query))
	})
	for i := len(searches) - 1; i >= 0 && len(st.Searches) < maxListed; i-- {
		st.Searches = append(st.Searches, *searches[i])
	}
	for i := len(calls) - 1; i >= 0 && len(st.Calls) < maxListed; i-- {
		st.Calls = append(st.Calls, calls[i])
	}
}

// sessionClosed reports whether the session is known closed. d.mu is
// held.
func (d *Dashboard) sessionClosed(id string) bool {
	r := d.sessions[id]
	return r != nil && !r.closedAt.IsZero()
}

// ledTo returns the latest of the session's searches that found tool.
func ledTo(searches []*Search, tool string) *Search {
	for i := len(searches) - 1; i >= 0; i-- {
		if slices.Contains(searches[i].Results, tool) {
			return searches[i]
		}
	}
	return nil
}

// queryText is a search's query and queries as one line.
func queryText(s *Search) string {
	parts := []string{}
	if s.Query != "" {
		parts = append(parts, s.Query)
	}
	parts = append(parts, s.Queries...)
	return strings.Join(parts, " | ")
}

func orNone(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
