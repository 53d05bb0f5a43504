package gateway

// The event feed: what a dashboard (package gateway/dashboard) learns of
// the gateway as it happens, as the Feed interface and its events. The
// gateway's hooks that build them are in feedhooks.go.

import (
	"fmt"
	"strings"
	"time"

	"github.com/toolsearch/toolsearch/core/search"
	"github.com/toolsearch/toolsearch/internal/utf8cut"
)

// Feed receives what happens in the gateway, as it happens. Its methods
// are called on the gateway's request paths, some with a session's lock
// held: they must return at once and must not call back into the gateway.
// Every text in an event may come from an upstream server or a model
// (tool names, descriptions, queries, stderr): whoever shows it escapes
// it. Every text a client gives (queries, tool names, its name and
// version, error texts quoting them) is cut to a bound (MaxFeedQuery,
// MaxFeedName, MaxFeedNames), so that an event is at most MaxFeedEvent
// bytes of text however large the request was.
type Feed interface {
	// Searched is a search_tools call answered (or refused).
	Searched(SearchEvent)
	// Loaded is tool definitions given to a client after a search: added
	// to its tool list (dynamic exposure) or returned with their schemas.
	Loaded(LoadEvent)
	// Called is a tool call finished, with its outcome.
	Called(CallEvent)
	// SessionChanged is a client session opened, changed (its exposure or
	// its tool list) or closed.
	SessionChanged(SessionEvent)
	// ServersChanged is the state of every upstream server, sent whenever
	// one of them changes.
	ServersChanged([]ServerView)
}

// EnrichFeed is a Feed that also shows background enrichment (the
// dashboard does): EnrichChanged is told its status whenever the state,
// a run's progress or the tools with hints change. As for every Feed
// method, it must return at once and must not call back into the gateway.
type EnrichFeed interface {
	EnrichChanged(EnrichStatus)
}

// SearchEvent is one search_tools call.
type SearchEvent struct {
	Time time.Time
	// Session is the gateway's number for the session (never its MCP
	// session id, which is a credential of the client's).
	Session string
	Client  string
	Query   string
	Queries []string
	// Form is how the query was read: keyword, regex, select, ...
	Form string
	// Results are the names of the tools found, best first.
	Results []string
	Total   int
	// Error says why the search was refused ("" when it was answered).
	Error    string
	Duration time.Duration
}

// LoadEvent is tool definitions given to a client after a search.
type LoadEvent struct {
	Time    time.Time
	Session string
	Tools   []string
	// How: "tool list" (added to the client's tools, dynamic exposure) or
	// "schemas" (returned in the search result).
	How string
}

// CallEvent is one finished tool call.
type CallEvent struct {
	Time    time.Time
	Session string
	Client  string
	// Tool is the name the client called; Server the server it went to
	// ("" when the name matched no tool).
	Tool   string
	Server string
	// Outcome is ok, tool_error, input_required or error (a protocol
	// error).
	Outcome  string
	Duration time.Duration
	// Arguments and Result are set only when toolsearch.dashboard
	// recordArguments is on; each is cut at maxRecorded bytes, with the
	// configuration's secrets replaced.
	Arguments string
	Result    string
}

// SessionEvent is the state of one client session.
type SessionEvent struct {
	Time time.Time
	// Session is the gateway's number for the session.
	Session  string
	Client   string
	Protocol string
	// Shared marks the server of every 2026-07-28 client of one exposure
	// (no session of their own).
	Shared   bool
	Exposure string
	Why      string
	Closed   bool
	// FullTokens is what the full tool list would cost the client;
	// SentTokens what its tool list costs.
	FullTokens int
	SentTokens int
	// ClientDefers says that the client is one that defers MCP tools
	// behind a tool search of its own (clientmode.go), in full exposure:
	// the list it was sent is not what its model is shown. ClientTokens
	// estimates what the model is shown then, in full exposure (0 in the
	// others): the whole definitions of the always-loaded tools and a
	// line with the name of each other tool, as such a client announces
	// what it defers. It is set for shared servers too, whose clients are
	// told apart by ClientSeen (ClientFeed).
	ClientDefers bool
	ClientTokens int
}

// ClientFeed is a Feed that is also told of the MCP 2026-07-28 clients a
// shared server serves over HTTP (the dashboard is): those clients have
// no session, and each request names its client in its _meta. ClientSeen
// is called at each of their requests; as for every Feed method, it must
// return at once and must not call back into the gateway.
type ClientFeed interface {
	ClientSeen(ClientEvent)
}

// ClientEvent is one request of an MCP 2026-07-28 client over HTTP.
type ClientEvent struct {
	Time time.Time
	// Session is the gateway's number for the shared server that served
	// the request.
	Session string
	// Client is the clientInfo name and version of the request's _meta
	// (self-reported; "" when it has none), Protocol its version.
	Client   string
	Protocol string
	// Defers says that the client is one that defers MCP tools behind a
	// tool search of its own (clientmode.go).
	Defers bool
}

// ServerView is one upstream server as a dashboard shows it.
type ServerView struct {
	Status
	// Deferral is whether the server's tools are deferred behind search
	// ("deferred", "listed" or "always loaded"), and DeferralWhy why.
	Deferral    string
	DeferralWhy string
	// Stderr is the last lines the server wrote to stderr, with the
	// configuration's secrets replaced.
	Stderr string
	// ToolList is the server's tools clients may see, by the names they
	// see, each with the start of its description (at most
	// maxListedTools).
	ToolList []ToolView
	// SkillList is the server's skills clients may see, by the gateway's
	// URIs, each with the start of its description (at most
	// maxListedTools); empty for a server without skills.
	SkillList []SkillView
}

// SkillView is one skill of a ServerView.
type SkillView struct {
	Name        string
	URI         string
	Description string
}

// SkillFeed is a Feed that also shows skills (the dashboard does):
// SkillsChanged is told what clients can see of them and what they did
// with them (SkillStats) with every server state, and when a client
// fetched a skill or read one of its files. As for every Feed method, it
// must return at once and must not call back into the gateway.
type SkillFeed interface {
	SkillsChanged(SkillStats)
}

// ToolView is one tool of a ServerView.
type ToolView struct {
	Name        string
	Description string
}

// The bounds of what an event keeps of the text a client gives. A text
// cut short ends in "…" and the size it had; the cut falls between two
// runes, so that what is kept stays valid UTF-8.
const (
	// MaxFeedQuery bounds a search's query, each of its queries, and an
	// error text, in bytes.
	MaxFeedQuery = 1 << 10
	// MaxFeedQueries bounds the queries a SearchEvent keeps (the search
	// refuses more): past it one more entry says how many were left out.
	MaxFeedQueries = search.MaxQueries
	// MaxFeedName bounds a tool's name, a client's name and version and
	// a protocol version, in bytes.
	MaxFeedName = 128
	// MaxFeedNames bounds the tool names a SearchEvent (Results) or a
	// LoadEvent keeps; SearchEvent.Total says how many were found.
	MaxFeedNames = 32
	// MaxFeedEvent bounds the text of one event, in bytes: a search's
	// query, queries (and the entry saying how many were left out) and
	// error, its results and client. A CallEvent keeps less: its tool
	// and client, and with recordArguments its arguments and result
	// (maxRecorded each).
	MaxFeedEvent = (2+MaxFeedQueries)*(MaxFeedQuery+cutMarkMax) + MaxFeedNames*(MaxFeedName+cutMarkMax) + 2*(MaxFeedName+cutMarkMax)
)

// cutMarkMax bounds what clip adds to a text it cuts.
const cutMarkMax = len("… (18446744073709551615 bytes)")

// clip is s cut to at most n bytes, between two runes, and marked as
// cut with the size it had. A text within n is kept, its invalid UTF-8
// replaced as JSON would.
func clip(s string, n int) string {
	if len(s) <= n {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	return strings.ToValidUTF8(utf8cut.Prefix(s, n), "") + fmt.Sprintf("… (%d bytes)", len(s))
}

// clipAll is list with each entry clipped to n bytes, and at most max
// entries: past it, one more says how many were left out.
func clipAll(list []string, n, max int) []string {
	if list == nil {
		return nil
	}
	out := make([]string, 0, min(len(list), max+1))
	for i, s := range list {
		if i == max {
			out = append(out, fmt.Sprintf("… (%d more)", len(list)-max))
			break
		}
		out = append(out, clip(s, n))
	}
	return out
}

// maxListedTools bounds the tools a ServerView lists.
const maxListedTools = 500

// maxRecorded bounds the arguments and the result a CallEvent records.
const maxRecorded = 4096

// stderrLines is how many lines of stderr a ServerView keeps.
const stderrLines = 20

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
