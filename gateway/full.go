package gateway

// Full exposure. Every session in full mode lists the same tools (every
// visible one), so the list is built once per catalog version (a snapshot
// and its names, fulllist.go), when a session first needs it, and shared:
// a session in full mode does not register the tools with its own MCP server (which would check and
// copy every definition again for every client). Instead, its tools/list
// and tools/call requests are answered from the view's list, and a change
// of the list is announced to the client with the library's own
// list_changed notification, set off by re-registering one placeholder
// tool that no listing shows.
//
// A session's first tools/list in full mode waits for the servers that
// are still starting and have no cached tools, so that a client which
// lists once and never acts on list_changed (claude -p, codex exec, on a
// first launch with an empty state directory) sees their tools. It waits
// up to limits.firstListWait, or less for a client known to give up on
// its first list sooner (firstListBound, clientmode.go). When it answers
// before every server is up, the list also holds the gateway's
// search_tools and call_tool (bridgeTools), so that the late servers'
// tools are still within reach; the log says which servers it did not
// wait for. Search and dynamic exposure never wait here: their list does
// not depend on the servers, and a search waits for a starting server it
// targets, or when it finds nothing while servers start (search.go).

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/config"
)

// fullTools returns the full list of v's catalog version, building it if
// it is not the one built last.
func (g *Gateway) fullTools(v *view) *fullList {
	c := &g.full
	c.mu.Lock()
	defer c.mu.Unlock()
	if fl := c.list; fl != nil && fl.snap == v.snap && fl.names == v.names {
		return fl
	}
	fl := g.buildFull(v)
	c.list, c.less = fl, nil
	return fl
}

// fullToolsFor is fullTools without the built-in tools named in off.
func (g *Gateway) fullToolsFor(v *view, off map[string]bool) *fullList {
	fl := g.fullTools(v)
	if len(off) == 0 {
		return fl
	}
	names := make([]string, 0, len(off))
	for n := range off {
		names = append(names, n)
	}
	sort.Strings(names)
	key := strings.Join(names, ",")
	c := &g.full
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.list != fl {
		return fl.without(off) // a newer list was built meanwhile
	}
	if less, ok := c.less[key]; ok {
		return less
	}
	less := fl.without(off)
	if c.less == nil {
		c.less = map[string]*fullList{}
	}
	c.less[key] = less
	return less
}

// buildFull makes the full list of v: every visible tool of the view under
// its exposed name, as full exposure registered them before. A definition
// the MCP library refuses (its checks run on a scratch server) is left out
// and logged, once per view.
func (g *Gateway) buildFull(v *view) *fullList {
	g.metrics.FullListBuilt()
	fl := &fullList{snap: v.snap, names: v.names}
	scratch := mcp.NewServer(&mcp.Implementation{Name: "toolsearch"}, nil)
	fl.has, fl.servers = map[string]bool{}, map[string]bool{}
	for _, t := range v.snap.Tools() {
		if !v.names.visible(t) {
			continue
		}
		name := v.names.toolName(t)
		mt, err := mcpTool(t, name)
		if err != nil {
			g.log.Warn("skipping a tool", "tool", t.ID(), "err", err)
			continue
		}
		if fl.has[name] || !g.guard(t.ID(), func() { scratch.AddTool(mt, nil) }) {
			continue
		}
		fl.has[name] = true
		fl.servers[t.Server] = true
		fl.tools = append(fl.tools, mt)
		if raw, ok := mt.InputSchema.(json.RawMessage); ok {
			if b := paramBindings(raw); len(b) > 0 {
				if fl.headers == nil {
					fl.headers = map[string][]paramBinding{}
				}
				fl.headers[name] = b
			}
		}
	}
	sort.Slice(fl.tools, func(i, j int) bool { return fl.tools[i].Name < fl.tools[j].Name })
	h := sha256.New()
	for _, t := range fl.tools {
		fmt.Fprintf(h, "%d:%s", len(t.Name), t.Name)
		if tool, ok := v.names.byName[t.Name]; v.names != nil && ok {
			fmt.Fprintf(h, "%d:%s", len(tool.Raw), tool.Raw)
		}
	}
	copy(fl.sum[:], h.Sum(nil))
	return fl
}

// syncFull points a session in full mode at v's list and tells the client
// when the list differs from the one it had. s.mu is held.
func (s *session) syncFull(v *view) {
	fl := s.g.fullToolsFor(v, s.builtinOff)
	if s.full == fl {
		return
	}
	changed := s.full == nil || s.full.sum != fl.sum
	s.full = fl
	if changed {
		s.announceFull() // listchanged.go
	}
}

// leaveFull ends full mode for a session (auto switching to dynamic): its
// tools are registered with its server from now on. s.mu is held.
func (s *session) leaveFull() {
	if s.full != nil {
		s.server.RemoveTools(listPlaceholder.Name)
		s.full = nil
	}
}

// fullNames returns the names a session in full mode lists. s.mu is held.
func (s *session) fullNames() []string {
	if s.full == nil {
		return nil
	}
	out := make([]string, 0, len(s.full.tools))
	for _, t := range s.full.tools {
		out = append(out, t.Name)
	}
	return out
}

// fullMiddleware answers tools/list and tools/call of a session in full
// mode from its view's list.
func (s *session) fullMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/list" && method != "tools/call" {
			return next(ctx, method, req)
		}
		s.mu.Lock()
		fl := s.full
		s.mu.Unlock()
		if fl == nil {
			return next(ctx, method, req)
		}
		if method == "tools/list" {
			cursor := ""
			if p, ok := req.GetParams().(*mcp.ListToolsParams); ok && p != nil {
				cursor = p.Cursor
			}
			s.mu.Lock()
			first := !s.listed
			s.listed = true
			facts := s.facts
			s.mu.Unlock()
			if first && cursor == "" {
				late, waited := s.g.awaitFirstList(ctx, s.g.firstListBound(facts))
				s.mu.Lock()
				if waited && s.full != nil {
					fl = s.full
				}
				if len(late) > 0 {
					s.bridge = true
				}
				s.mu.Unlock()
			}
			res, err := fl.page(cursor)
			s.mu.Lock()
			bridge := s.bridge
			s.mu.Unlock()
			if err == nil && bridge && res.NextCursor == "" {
				res.Tools = append(res.Tools, s.g.bridgeTools(fl)...)
			}
			return res, err
		}
		call, ok := req.(*mcp.CallToolRequest)
		if !ok || call.Params == nil {
			return next(ctx, method, req)
		}
		if !fl.has[call.Params.Name] {
			s.mu.Lock()
			bridge := s.bridge
			s.mu.Unlock()
			switch name := call.Params.Name; {
			case bridge && name == searchToolName:
				return s.handleSearch(ctx, call)
			case bridge && name == callToolName:
				return s.handleCall(ctx, call)
			}
			msg := fmt.Sprintf("unknown tool %q", call.Params.Name)
			if note := s.g.startingNote(nil); note != "" {
				msg += ". " + note
			}
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
		}
		res, err := s.nativeHandler(ctx, call)
		if err == nil && res != nil && res.Content == nil {
			res.Content = []mcp.Content{} // as the library sends it: never null
		}
		if err == nil && res != nil && clientModern(call.Session) {
			res = typedResult(res)
		}
		return res, err
	}
}

// awaitFirstList waits, up to bound, for the servers that are still
// starting and whose tools are not known yet (no cached manifest), and
// logs what it waited for and which servers it did not wait for. It
// returns those it did not wait for (late) and whether there were any
// to wait for.
func (g *Gateway) awaitFirstList(ctx context.Context, bound time.Duration) (late []string, waited bool) {
	pending := g.startingUnknown()
	if len(pending) == 0 {
		return nil, false
	}
	if bound <= 0 {
		g.log.Info("first tools/list: not waiting for servers still starting; search_tools and call_tool reach their tools meanwhile, and their tools come with list_changed",
			"not_waited_for", pending)
		return pending, true
	}
	start := time.Now()
	timer := time.NewTimer(bound)
	defer timer.Stop()
	for i, k := range pending {
		select {
		case <-g.ups()[k].Settled():
			continue
		case <-timer.C:
		case <-ctx.Done():
		}
		for _, k := range pending[i:] {
			select {
			case <-g.ups()[k].Settled():
			default:
				late = append(late, k)
			}
		}
		break
	}
	took := time.Since(start).Round(time.Millisecond)
	if len(late) > 0 {
		g.log.Warn("first tools/list: did not wait longer for servers still starting; search_tools and call_tool reach their tools meanwhile, and their tools come with list_changed",
			"not_waited_for", late, "waited", took, "bound", bound)
	} else {
		g.log.Info("first tools/list: waited for the servers starting", "servers", pending, "waited", took)
	}
	return late, true
}

// bridgeTools are the tools a session in full exposure lists besides the
// servers' when its first list was answered while servers were still
// starting: the gateway's search_tools and call_tool, with which a
// client that lists once (and does not act on list_changed) still
// reaches the late servers' tools. A search for them waits for their
// servers (search.go). They stay in the session's list from then on, so
// that a client which cached them keeps its call path.
func (g *Gateway) bridgeTools(fl *fullList) []*mcp.Tool {
	v := g.cur.Load()
	var out []*mcp.Tool
	if !fl.has[searchToolName] {
		desc, schema := g.searchToolSchema(searchDescription(v, g, config.ExposureSearch, g.Visible), false) // skills.go
		out = append(out, &mcp.Tool{Name: searchToolName, Title: "Search tools",
			Description: desc, InputSchema: schema, Meta: alwaysLoadMeta, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}})
	}
	if !fl.has[callToolName] {
		out = append(out, &mcp.Tool{Name: callToolName, Title: "Call a tool", Description: callDescription,
			InputSchema: callInputSchema, Meta: alwaysLoadMeta})
	}
	return out
}

// completeType is what a complete result of MCP 2026-07-28 says it is.
var completeType = []byte(`{"resultType":"complete"}`)

// typedResult gives a result the gateway answers a 2026-07-28 client with
// outside the library's own tool handling (full exposure) the resultType
// the library gives its tools' results: "complete" unless it needs input
// (a server's input_required keeps its type). The library sets the type
// only as it decodes a result, so a complete one is decoded and filled in.
func typedResult(res *mcp.CallToolResult) *mcp.CallToolResult {
	if res.NeedsInput() || res.InputRequests != nil {
		return res
	}
	var out mcp.CallToolResult
	if err := json.Unmarshal(completeType, &out); err != nil {
		return res
	}
	out.Meta, out.Content, out.StructuredContent, out.IsError = res.Meta, res.Content, res.StructuredContent, res.IsError
	out.RequestState = res.RequestState
	if e := res.GetError(); e != nil {
		out.SetError(e)
	}
	return &out
}
