package skills

// Finding skills. The skills clients can see are indexed by the same
// engine and score model as tools (package core/search): each skill is a
// document named after its path, titled by its path and described by its
// description (SearchServer). The gateway's search tool and the command
// line's search use this one index, so that both find the same skills.

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/search"
)

// ListPageSize is the number of skills an aggregator's skills/list gives a
// page: what a client's first skills/list costs is the tokens of that many.
const ListPageSize = 100

// Ref is one skill of one server, as an aggregator serves it.
type Ref struct {
	// Server is the key of the server that serves the skill.
	Server string
	// Entry is the server's entry, its URIs the server's own.
	Entry *Entry
	// URI is the aggregator's URI of the skill's SKILL.md
	// (Qualify(Server, Entry.URI)).
	URI string
}

// NewRef returns the Ref of a server's entry, with the aggregator's URI.
func NewRef(server string, e *Entry) (Ref, error) {
	uri, err := Qualify(server, e.URI)
	if err != nil {
		return Ref{}, err
	}
	return Ref{Server: server, Entry: e, URI: uri}, nil
}

// Wire is the entry as the aggregator serves it: every URI its own (the
// skill's and each file's).
func (r Ref) Wire() json.RawMessage {
	return r.Entry.Wire(func(u string) string {
		q, err := Qualify(r.Server, u)
		if err != nil {
			return u
		}
		return q
	})
}

// Tokens is the o200k size of the entry as the aggregator serves it.
func (r Ref) Tokens() int { return catalog.CountTokens(string(r.Wire())) }

// Bytes is the sum of the sizes of the skill's files, as its manifest
// lists them: what a client reads only when it uses the skill (0 for a
// dynamic skill, whose entry lists none).
func (r Ref) Bytes() int64 {
	var n int64
	for _, f := range r.Entry.Files {
		n += f.Size
	}
	return n
}

// ListTokens is the o200k size of the skills of one skills/list page
// holding refs (their entries as a JSON array).
func ListTokens(refs []Ref) int {
	if len(refs) == 0 {
		return 0
	}
	page := make([]json.RawMessage, len(refs))
	for i, r := range refs {
		page[i] = r.Wire()
	}
	b, err := json.Marshal(page)
	if err != nil {
		return 0
	}
	return catalog.CountTokens(string(b))
}

// FirstListTokens is what a client's first skills/list costs: the tokens
// of the first ListPageSize skills of refs.
func FirstListTokens(refs []Ref) int {
	return ListTokens(refs[:min(len(refs), ListPageSize)])
}

// Index finds skills by their paths, names and descriptions.
type Index struct {
	refs []Ref
	ix   *search.Index
	docs map[string]int // search document ID → index in refs
}

// NewIndex indexes refs. A server whose skills cannot be made documents
// (a key no tool name can start with) is left out, and the error says
// which; the index of the others is still returned.
func NewIndex(refs []Ref) (*Index, error) {
	x := &Index{refs: refs, docs: make(map[string]int, len(refs))}
	var (
		servers  []*catalog.Server
		firstErr error
	)
	for i := 0; i < len(refs); {
		j := i
		for j < len(refs) && refs[j].Server == refs[i].Server {
			j++
		}
		entries := make([]*Entry, 0, j-i)
		for _, r := range refs[i:j] {
			entries = append(entries, r.Entry)
		}
		srv, names, err := SearchServer(refs[i].Server, entries)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			i = j
			continue
		}
		for k, n := range names {
			x.docs[refs[i].Server+catalog.IDSeparator+n] = i + k
		}
		servers = append(servers, srv)
		i = j
	}
	if len(servers) == 0 {
		return x, firstErr // nothing to search: Search finds nothing
	}
	snap, err := catalog.NewSnapshot(servers...)
	if err != nil {
		return x, err
	}
	x.ix = search.Build(snap)
	return x, firstErr
}

// Len is the number of skills indexed.
func (x *Index) Len() int {
	if x == nil {
		return 0
	}
	return len(x.refs)
}

// Hit is one skill found.
type Hit struct {
	Ref
	// Score is the engine's score of the query that found it first; Why
	// what matched, when asked to explain.
	Score float64
	Why   string
}

// Search runs each query (empty ones skipped) as req says (its Query
// aside: Mode, MaxResults, Servers, MinScore, Explain) and returns the
// skills found, best first, the first query's hits before the second's,
// each skill once, at most req.MaxResults (search.DefaultMaxResults when
// 0). An error about a query wraps search.ErrBadQuery; the hits found
// before it are returned with it.
func (x *Index) Search(ctx context.Context, queries []string, req search.Request) ([]Hit, error) {
	if x == nil || x.ix == nil || len(x.refs) == 0 {
		return nil, nil
	}
	max := req.MaxResults
	if max <= 0 {
		max = search.DefaultMaxResults
	}
	var out []Hit
	seen := map[int]bool{}
	for _, q := range queries {
		if q == "" {
			continue
		}
		if names, ok := strings.CutPrefix(strings.TrimSpace(q), "select:"); ok {
			for _, i := range x.selected(names) {
				if !seen[i] {
					seen[i] = true
					out = append(out, Hit{Ref: x.refs[i], Score: 1})
				}
			}
			continue
		}
		r := req
		r.Query, r.Visible, r.Learned = q, nil, nil
		res, err := x.ix.Search(ctx, r)
		if err != nil {
			return out, err
		}
		for _, h := range res.Hits {
			i, ok := x.docs[h.Tool.ID()]
			if !ok || seen[i] {
				continue
			}
			seen[i] = true
			out = append(out, Hit{Ref: x.refs[i], Score: h.Score, Why: h.Why})
		}
	}
	if len(out) > max {
		out = out[:max]
	}
	return out, nil
}

// selected returns the skills a select: query names, in its order: each
// comma-separated name picks every skill whose name (its frontmatter's),
// path, search name (path with dots), server-qualified search name
// (server/name or server__name) or aggregator URI it is.
func (x *Index) selected(names string) []int {
	var out []int
	for _, n := range strings.Split(names, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		for i, r := range x.refs {
			_, path, _ := SplitSkillURI(r.Entry.URI)
			doc := docName(path)
			if n == r.Entry.Name || n == path || n == doc || n == r.URI ||
				n == r.Server+catalog.IDSeparator+doc || n == r.Server+"__"+doc {
				out = append(out, i)
			}
		}
	}
	return out
}

// Share splits one budget of max results between tools and skills found
// by the same queries, each list best first: it takes them in turn, a
// tool, then a skill, then a tool..., and when one list runs out the other
// fills the rest. It returns how many of each to keep (at most tools and
// skills, together at most max). So with both lists long, max 5 keeps
// three tools and two skills; a query that finds no tool gives every place
// to skills, and one that finds no skill to tools.
func Share(tools, skills, max int) (keepTools, keepSkills int) {
	for keepTools+keepSkills < max && (keepTools < tools || keepSkills < skills) {
		if keepTools < tools && (keepTools <= keepSkills || keepSkills >= skills) {
			keepTools++
		} else {
			keepSkills++
		}
	}
	return keepTools, keepSkills
}
