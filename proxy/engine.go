package proxy

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/search"
)

// requestServer is the catalog key of request tools that name no MCP
// server (tools not called mcp__<server>__<tool>).
const requestServer = "_request"

// engine searches the deferred tools of one tools array: a catalog snapshot
// and index built from them, and the way back from a catalog tool to its
// name and definition in the request.
type engine struct {
	ix      *search.Index
	wire    map[*catalog.Tool]string
	defs    map[string]json.RawMessage
	servers map[string]int // prefix → deferred tools
	count   int
}

// splitMCPName reads mcp__<server>__<tool>; ok is false for other names or
// a server key the catalog cannot take.
func splitMCPName(name string) (server, tool string, ok bool) {
	rest, found := strings.CutPrefix(name, "mcp__")
	if !found {
		return "", "", false
	}
	server, tool, found = strings.Cut(rest, catalog.WireSeparator)
	if !found || tool == "" || catalog.ValidKey(server) != nil {
		return "", "", false
	}
	return server, tool, true
}

// buildEngine indexes the deferred tools of a request. MCP tools
// (mcp__server__tool) are grouped by server, so that a server prefix query
// finds them; the rest share one group.
func buildEngine(tools []json.RawMessage, info []toolInfo) (*engine, error) {
	e := &engine{wire: map[*catalog.Tool]string{}, defs: map[string]json.RawMessage{}, servers: map[string]int{}}
	byServer := map[string][]json.RawMessage{}
	var order []string
	back := map[string]string{} // catalog ID → request name
	for i, t := range tools {
		if !info[i].DeferLoading || info[i].Name == "" || isServerSearch(info[i].Type) {
			continue
		}
		var def struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		if err := json.Unmarshal(t, &def); err != nil {
			return nil, fmt.Errorf("tools.%d: %w", i, err)
		}
		server, name, ok := splitMCPName(def.Name)
		prefix := "mcp__" + server + "__"
		if !ok {
			server, name, prefix = requestServer, def.Name, ""
		}
		if _, dup := e.defs[def.Name]; dup {
			return nil, fmt.Errorf("tools: two tools are named %q", def.Name)
		}
		schema := def.InputSchema
		if len(schema) == 0 || string(schema) == "null" {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		// The request's full name goes in as the title, so that a regex over
		// the names the model sees ("mcp__slack__.*") matches, as the API's
		// regex search does.
		raw := mustJSON(map[string]any{"name": name, "title": def.Name, "description": def.Description, "inputSchema": schema})
		if _, seen := byServer[server]; !seen {
			order = append(order, server)
		}
		byServer[server] = append(byServer[server], raw)
		back[server+catalog.IDSeparator+name] = def.Name
		e.defs[def.Name] = stripDefer(t)
		if prefix != "" {
			e.servers[prefix]++
		}
		e.count++
	}
	servers := make([]*catalog.Server, 0, len(order))
	for _, key := range order {
		srv, err := catalog.NewServer(key, byServer[key], nil, false)
		if err != nil {
			return nil, fmt.Errorf("indexing the deferred tools of %q: %w", key, err)
		}
		servers = append(servers, srv)
	}
	snap, err := catalog.NewSnapshot(servers...)
	if err != nil {
		return nil, fmt.Errorf("indexing the deferred tools: %w", err)
	}
	for _, t := range snap.Tools() {
		e.wire[t] = back[t.ID()]
	}
	e.ix = search.Build(snap)
	return e, nil
}

// searchOutcome is what one emulated server-side search found.
type searchOutcome struct {
	// Names are the request names of the tools found, best first.
	Names []string
	// ErrorCode is set when the search failed (invalid_tool_input).
	ErrorCode string
	// Message explains an error or an empty result to the model.
	Message string
}

// Search runs one query. regex reads it as a Python-style regular
// expression (tool_search_tool_regex), else as keywords (bm25).
func (e *engine) Search(ctx context.Context, query string, regex bool, max int) (searchOutcome, error) {
	if strings.TrimSpace(query) == "" {
		return searchOutcome{ErrorCode: "invalid_tool_input", Message: "the query is empty"}, nil
	}
	mode := search.ModeKeyword
	if regex {
		mode = search.ModeRegex
		if len(query) > search.MaxRegexLen {
			return searchOutcome{ErrorCode: "invalid_tool_input", Message: fmt.Sprintf("the pattern is longer than %d characters", search.MaxRegexLen)}, nil
		}
	}
	res, err := e.ix.Search(ctx, search.Request{Query: query, Mode: mode, MaxResults: max})
	if err != nil {
		if errors.Is(err, search.ErrTimeExceeded) {
			return searchOutcome{ErrorCode: "execution_time_exceeded", Message: err.Error()}, nil
		}
		if errors.Is(err, search.ErrBadQuery) {
			return searchOutcome{ErrorCode: "invalid_tool_input", Message: err.Error()}, nil
		}
		return searchOutcome{}, fmt.Errorf("searching %q: %w", query, err)
	}
	var out searchOutcome
	for _, h := range res.Hits {
		if n := e.wire[h.Tool]; n != "" {
			out.Names = append(out.Names, n)
		}
	}
	if len(out.Names) == 0 {
		out.Message = fmt.Sprintf("No deferred tool matched %q.", query)
		if len(res.NearestServers) > 0 {
			out.Message += " Closest servers: " + strings.Join(res.NearestServers, ", ") + "."
		}
	}
	return out, nil
}

// description is the description of the ordinary tool that stands in for a
// server search tool upstream.
func (e *engine) description(regex bool) string {
	var b strings.Builder
	if regex {
		b.WriteString("Search the deferred tools with a regular expression (Python re syntax, at most 200 characters) matched against tool names, descriptions and parameter names, and load the tools found; then call them. ")
	} else {
		b.WriteString("Search the deferred tools with a natural-language query or keywords, and load the tools found; then call them. \"select:name1,name2\" loads tools by exact name. ")
	}
	fmt.Fprintf(&b, "%d deferred tools are available.", e.count)
	if len(e.servers) > 0 {
		prefixes := make([]string, 0, len(e.servers))
		for p := range e.servers {
			prefixes = append(prefixes, p)
		}
		sort.Strings(prefixes)
		parts := make([]string, 0, len(prefixes))
		for _, p := range prefixes {
			parts = append(parts, fmt.Sprintf("%s* (%d)", p, e.servers[p]))
		}
		b.WriteString(" Servers: " + strings.Join(parts, ", ") + ".")
	}
	return b.String()
}

// searchToolDef is the ordinary tool sent upstream in place of a server
// search tool of the given name.
func (e *engine) searchToolDef(name string, regex bool) json.RawMessage {
	schema := `{"type":"object","properties":{"query":{"type":"string","description":"What the tool should do, or keywords"}},"required":["query"]}`
	if regex {
		schema = `{"type":"object","properties":{"pattern":{"type":"string","description":"A regular expression, for example \"(?i)slack.*message\""}},"required":["pattern"]}`
	}
	return mustJSON(map[string]any{"name": name, "description": e.description(regex), "input_schema": json.RawMessage(schema)})
}

// engineCache keeps the engines of the tools arrays seen last, keyed by a
// hash of the array, so that the requests of one session share one index.
// Concurrent requests for the same array build it once.
type engineCache struct {
	max int

	mu  sync.Mutex
	lru *list.List // of *cacheEntry, most recent first
	by  map[[32]byte]*list.Element
}

type cacheEntry struct {
	key  [32]byte
	once sync.Once
	eng  *engine
	err  error
}

func newEngineCache(max int) *engineCache {
	if max <= 0 {
		max = 32
	}
	return &engineCache{max: max, lru: list.New(), by: map[[32]byte]*list.Element{}}
}

// get returns the engine of a tools array, building it on first use. hit
// reports whether it was cached.
func (c *engineCache) lookup(toolsJSON []byte, build func() (*engine, error)) (eng *engine, hit bool, err error) {
	key := sha256.Sum256(toolsJSON)
	c.mu.Lock()
	el, ok := c.by[key]
	if ok {
		c.lru.MoveToFront(el)
	} else {
		el = c.lru.PushFront(&cacheEntry{key: key})
		c.by[key] = el
		for c.lru.Len() > c.max {
			old := c.lru.Back()
			c.lru.Remove(old)
			delete(c.by, old.Value.(*cacheEntry).key)
		}
	}
	ent := el.Value.(*cacheEntry)
	c.mu.Unlock()
	ent.once.Do(func() { ent.eng, ent.err = build() })
	if ent.err != nil {
		c.mu.Lock()
		if cur, ok := c.by[key]; ok && cur == el {
			c.lru.Remove(el)
			delete(c.by, key)
		}
		c.mu.Unlock()
	}
	return ent.eng, ok, ent.err
}
