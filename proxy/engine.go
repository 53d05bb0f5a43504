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
	// size is the bytes of the definitions indexed: what the engine
	// weighs in the cache.
	size int64
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

// Bounds of the emulated server-side search's indexes. An index takes about
// four times the bytes of the definitions it indexes (2,000 tools of 2 KB:
// 4 MB of definitions, 15 MB of heap, built in about 0.35 s on one core).
const (
	// MaxDeferredTools is the most deferred tools one request may have
	// indexed (the API's own tool search takes catalogs of up to 10,000).
	MaxDeferredTools = 10_000
	// MaxDeferredBytes is the most bytes of deferred definitions one
	// request may have indexed.
	MaxDeferredBytes = 16 << 20
	// engineCacheEntries and engineCacheBytes bound the cache of indexes:
	// at most 32 indexes, of at most 16 MiB of definitions in all (about
	// 64 MiB of heap). An index larger than that is built, used for its
	// request and dropped.
	engineCacheEntries = 32
	engineCacheBytes   = 16 << 20
	// bigBuild is the size of definitions from which a build waits for the
	// one build slot: large builds go one at a time, so that they keep at
	// most one core and one index under construction, while small ones
	// (a session's own list) never queue behind them.
	bigBuild = 1 << 20
)

// errTooManyTools is a request whose deferred tools are past
// MaxDeferredTools or MaxDeferredBytes.
var errTooManyTools = errors.New("too many deferred tools to search")

// deferredSize returns the number and the bytes of a request's deferred
// tools, as buildEngine indexes them.
func deferredSize(tools []json.RawMessage, info []toolInfo) (n int, size int64) {
	for i, t := range tools {
		if info[i].DeferLoading && info[i].Name != "" && !isServerSearch(info[i].Type) {
			n++
			size += int64(len(t))
		}
	}
	return n, size
}

// checkDeferredSize refuses a request past MaxDeferredTools or
// MaxDeferredBytes, naming the bound.
func checkDeferredSize(n int, size int64) error {
	switch {
	case n > MaxDeferredTools:
		return fmt.Errorf("tools: %w: %d deferred tools, the proxy indexes at most %d", errTooManyTools, n, MaxDeferredTools)
	case size > MaxDeferredBytes:
		return fmt.Errorf("tools: %w: %d bytes of deferred tool definitions, the proxy indexes at most %d", errTooManyTools, size, MaxDeferredBytes)
	}
	return nil
}

// buildEngine indexes the deferred tools of a request. MCP tools
// (mcp__server__tool) are grouped by server, so that a server prefix query
// finds them; the rest share one group. A request past MaxDeferredTools or
// MaxDeferredBytes is refused before anything is indexed.
func buildEngine(tools []json.RawMessage, info []toolInfo) (*engine, error) {
	if err := checkDeferredSize(deferredSize(tools, info)); err != nil {
		return nil, err
	}
	e := &engine{wire: map[*catalog.Tool]string{}, defs: map[string]json.RawMessage{}, servers: map[string]int{}}
	byServer := map[string][]json.RawMessage{}
	var order []string
	back := map[string]string{} // catalog ID → request name
	for i, t := range tools {
		if !info[i].DeferLoading || info[i].Name == "" || isServerSearch(info[i].Type) {
			continue
		}
		e.size += int64(len(t))
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
// Concurrent requests for the same array build it once. It holds at most
// maxEntries engines and maxBytes of the definitions they index, and
// forgets the least recently used first; building a large index waits for
// the one build slot (see bigBuild).
type engineCache struct {
	maxEntries int
	maxBytes   int64
	slot       chan struct{} // one large build at a time

	mu    sync.Mutex
	lru   *list.List // of *cacheEntry, most recent first
	by    map[[32]byte]*list.Element
	bytes int64 // size of the built engines held
}

type cacheEntry struct {
	key  [32]byte
	once sync.Once
	eng  *engine
	err  error
	size int64 // counted in engineCache.bytes once built
}

// newEngineCache returns a cache of at most maxEntries engines and
// maxBytes of definitions (engineCacheEntries and engineCacheBytes when
// not positive).
func newEngineCache(maxEntries int, maxBytes int64) *engineCache {
	if maxEntries <= 0 {
		maxEntries = engineCacheEntries
	}
	if maxBytes <= 0 {
		maxBytes = engineCacheBytes
	}
	return &engineCache{maxEntries: maxEntries, maxBytes: maxBytes, slot: make(chan struct{}, 1),
		lru: list.New(), by: map[[32]byte]*list.Element{}}
}

// lookup returns the engine of a tools array, building it on first use;
// hit reports whether it was cached. size is the bytes of the array's
// deferred definitions: from bigBuild on, the build waits for the build
// slot, or fails when ctx ends first.
func (c *engineCache) lookup(ctx context.Context, toolsJSON []byte, size int64, build func() (*engine, error)) (eng *engine, hit bool, err error) {
	key := sha256.Sum256(toolsJSON)
	c.mu.Lock()
	el, ok := c.by[key]
	if ok {
		c.lru.MoveToFront(el)
	} else {
		el = c.lru.PushFront(&cacheEntry{key: key})
		c.by[key] = el
		c.evict(el)
	}
	ent := el.Value.(*cacheEntry)
	c.mu.Unlock()
	ent.once.Do(func() {
		if size >= bigBuild {
			select {
			case c.slot <- struct{}{}:
				defer func() { <-c.slot }()
			case <-ctx.Done():
				ent.err = fmt.Errorf("waiting to index the deferred tools: %w", ctx.Err())
				return
			}
		}
		ent.eng, ent.err = build()
		if ent.err != nil {
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		switch cur, ok := c.by[key]; {
		case !ok || cur != el:
			// Pushed out while it was built: used for its request only.
		case ent.eng.size > c.maxBytes:
			// Alone past the bound: used for its request only, and it
			// pushes out nothing.
			c.remove(el)
		default:
			ent.size = ent.eng.size
			c.bytes += ent.size
			c.evict(el)
		}
	})
	if ent.err != nil {
		c.mu.Lock()
		c.remove(el)
		c.mu.Unlock()
	}
	return ent.eng, ok, ent.err
}

// evict drops the least recently used entries other than keep until the
// cache is within its bounds (keep, the entry just used, is within them
// alone). c.mu is held.
func (c *engineCache) evict(keep *list.Element) {
	for c.lru.Len() > c.maxEntries || c.bytes > c.maxBytes {
		old := c.lru.Back()
		if old == keep {
			if old = keep.Prev(); old == nil {
				return
			}
		}
		c.remove(old)
	}
}

// remove takes an entry out of the cache, if it is still in. c.mu is held.
func (c *engineCache) remove(el *list.Element) {
	ent := el.Value.(*cacheEntry)
	if cur, ok := c.by[ent.key]; !ok || cur != el {
		return
	}
	c.lru.Remove(el)
	delete(c.by, ent.key)
	c.bytes -= ent.size
}
