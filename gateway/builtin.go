package gateway

// The gateway's built-in tools (package builtin) as one more catalog
// source, the server builtin.Key: registered when the gateway is made,
// re-registered when upstreams declaring resources come or go
// (list_resources and read_resource exist only while some upstream
// declares the resources capability, as its cached manifest records), and
// called here instead of an upstream. Policy, ask rules and argument
// validation apply to them as to any tool.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/gateway/builtin"
)

// initBuiltins reads the builtins configuration and puts the built-in
// tools into the first view. It is called by New.
func (g *Gateway) initBuiltins(v *view) error {
	cfg, err := builtin.ParseConfig(g.cfg.Gateway.Builtins, os.LookupEnv, nil)
	if err != nil {
		return fmt.Errorf("config %s: toolsearch.%w", g.cfg.Path, err)
	}
	set := builtin.New(cfg, g.log)
	g.builtin = &builtinTools{set: set,
		byClient: !sameSet(set.Hidden(builtin.Client{}), set.Hidden(builtin.Client{Name: "a client", OwnTools: true}))}
	g.builtin.resources = anyDeclaresResources(v)
	srv, err := g.builtinServer(g.builtin.resources)
	if err != nil {
		return err
	}
	if len(srv.Tools) == 0 {
		return nil
	}
	snap, _, err := v.snap.Apply(catalog.Put(srv))
	if err != nil {
		return fmt.Errorf("built-in tools: %w", err)
	}
	v.snap = snap
	v.tokens[builtin.Key] = srv.Tokens()
	return nil
}

// builtinServer makes the catalog server of the built-in tools.
func (g *Gateway) builtinServer(resources bool) (*catalog.Server, error) {
	srv, err := catalog.NewServer(builtin.Key, g.builtin.set.Definitions(resources), nil, false)
	if err != nil {
		return nil, fmt.Errorf("built-in tools: %w", err)
	}
	srv.Title = "toolsearch built-in tools"
	return g.withHints(srv), nil
}

// anyDeclaresResources reports whether any upstream server of the view
// declared the resources capability (declaresResources), whether or not it
// lists any resources now.
func anyDeclaresResources(v *view) bool {
	for k, m := range v.extras {
		if k != builtin.Key && declaresResources(m) {
			return true
		}
	}
	return false
}

// startBuiltins stops the language servers when ctx ends. It is called by
// Start.
func (g *Gateway) startBuiltins(ctx context.Context) {
	if g.builtin == nil {
		return
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		<-ctx.Done()
		g.builtin.set.Close()
	}()
}

// refreshBuiltins adds or removes the resource tools when whether some
// upstream declares resources has changed. It is called after every publish.
func (g *Gateway) refreshBuiltins() {
	if g.builtin == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	old := g.cur.Load()
	want := anyDeclaresResources(old)
	if want == g.builtin.resources {
		return
	}
	srv, err := g.builtinServer(want)
	if err != nil {
		g.log.Warn("could not update the built-in tools", "err", err)
		return
	}
	change := catalog.Put(srv)
	if len(srv.Tools) == 0 {
		change = catalog.Remove(builtin.Key)
	}
	snap, _, err := g.cat.Apply(change)
	if err != nil {
		g.log.Warn("could not update the built-in tools", "err", err)
		return
	}
	nv := &view{snap: snap, index: old.index.Update(snap, builtin.Key),
		tokens: cloneMap(old.tokens), extras: old.extras, fromCache: old.fromCache}
	nv.tokens[builtin.Key] = srv.Tokens()
	g.builtin.resources = want
	g.nameView(nv)
	g.cur.Store(nv)
	g.indexChanged()
	g.log.Info("built-in resource tools "+map[bool]string{true: "added", false: "removed"}[want], "version", snap.Version())
}

// isBuiltin reports whether t is one of the gateway's own built-in tools.
func (g *Gateway) isBuiltin(t *catalog.Tool) bool {
	return g.builtin != nil && t.Server == builtin.Key
}

// callBuiltin runs the built-in tool to, under a span of its own (the
// outcome ends it). Policy and ask rules were applied by the caller; the
// arguments are validated here.
func (g *Gateway) callBuiltin(ctx context.Context, req *mcp.CallToolRequest, to target, args json.RawMessage) callOutcome {
	ctx, span, _ := g.tracer.StartCall(ctx, to.server, to.name, true, nil) // tracing.go
	t := to.tool
	args = orEmpty(args)
	if err := g.cur.Load().validators.validate(t, args, g.log); err != nil {
		return callOutcome{res: toolError("the arguments do not match the input schema of %s: %v", to.exposed, err), count: "invalid_arguments", span: span}
	}
	cctx, cancel := context.WithTimeout(ctx, g.cfg.Gateway.Limits.CallTimeout)
	defer cancel()
	var res *mcp.CallToolResult
	var err error
	switch t.Name {
	case builtin.ListResources:
		res, err = g.listResourcesTool(args)
	case builtin.ReadResource:
		var ss *mcp.ServerSession
		if req != nil {
			ss = req.Session
		}
		res, err = g.readResourceTool(cctx, ss, args)
	default:
		var text string
		text, err = g.builtin.set.Call(cctx, t.Name, args, builtin.Env{ClientRoots: clientRoots(cctx, req)})
		res = textResult(text)
	}
	outcome := "ok"
	switch {
	case err != nil && ctx.Err() != nil:
		outcome = "cancelled"
		res = toolError("the call to %s was cancelled", to.exposed)
	case err != nil && errors.Is(cctx.Err(), context.DeadlineExceeded):
		outcome = "timeout"
		res = toolError("the call to %s timed out after %v", to.exposed, g.cfg.Gateway.Limits.CallTimeout)
	case err != nil:
		outcome = "tool_error"
		res = toolError("%v", err)
	}
	return callOutcome{res: res, count: outcome, span: span}
}

// clientRoots asks the client for its MCP roots, if it declared the
// capability. Nil means none: the configured roots apply.
func clientRoots(ctx context.Context, req *mcp.CallToolRequest) []string {
	if req == nil || req.Session == nil {
		return nil
	}
	ip := req.Session.InitializeParams()
	//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.RootsV2 == nil {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	//lint:ignore SA1019 roots are forwarded for 2025-11-25 clients and servers, which still use them
	res, err := req.Session.ListRoots(rctx, nil)
	if err != nil || res == nil {
		return nil
	}
	out := make([]string, 0, len(res.Roots))
	for _, r := range res.Roots {
		if r != nil && r.URI != "" {
			out = append(out, r.URI)
		}
	}
	return out
}

// resourceList is what list_resources returns, as JSON text.
type resourceList struct {
	Servers []serverResources `json:"servers"`
	Note    string            `json:"note"`
}

type serverResources struct {
	Server    string        `json:"server"`
	Resources []resourceOut `json:"resources,omitempty"`
	Templates []templateOut `json:"templates,omitempty"`
}

type resourceOut struct {
	URI         string `json:"uri"`
	Name        string `json:"name,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
	Size        int64  `json:"size,omitempty"`
}

type templateOut struct {
	URITemplate string `json:"uriTemplate"`
	Name        string `json:"name,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
}

// maxListedResources bounds one list_resources answer.
const maxListedResources = 500

func (g *Gateway) listResourcesTool(args json.RawMessage) (*mcp.CallToolResult, error) {
	var a struct {
		Server string `json:"server"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return nil, fmt.Errorf("list_resources takes {\"server\": string}: %w", err)
	}
	v := g.cur.Load()
	keys := make([]string, 0, len(v.extras))
	for k, m := range v.extras {
		if m != nil && (len(m.Resources) > 0 || len(m.Templates) > 0) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	want := strings.TrimSpace(a.Server)
	if want != "" {
		found := false
		for _, k := range keys {
			if k == want {
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("server %q offers no resources; servers with resources: %s", want, strings.Join(keys, ", "))
		}
		keys = []string{want}
	}
	out := resourceList{Servers: []serverResources{}}
	n, more := 0, 0
	for _, k := range keys {
		m := v.extras[k]
		sr := serverResources{Server: k}
		for _, r := range m.Resources {
			if n >= maxListedResources {
				more++
				continue
			}
			n++
			sr.Resources = append(sr.Resources, resourceOut{URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType, Size: r.Size})
		}
		for _, t := range m.Templates {
			sr.Templates = append(sr.Templates, templateOut{URITemplate: t.URITemplate, Name: t.Name, Title: t.Title, Description: t.Description, MIMEType: t.MIMEType})
		}
		out.Servers = append(out.Servers, sr)
	}
	out.Note = "Read a resource with read_resource {\"server\": <server>, \"uri\": <uri>}; for a template, fill in its {variables} to make the uri."
	if more > 0 {
		out.Note += fmt.Sprintf(" %d more resources are not listed; give server to list one server's.", more)
	}
	b, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		return nil, err
	}
	return textResult(string(b)), nil
}

func (g *Gateway) readResourceTool(ctx context.Context, ss *mcp.ServerSession, args json.RawMessage) (*mcp.CallToolResult, error) {
	var a struct {
		Server string `json:"server"`
		URI    string `json:"uri"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return nil, fmt.Errorf("read_resource takes {\"server\": string, \"uri\": string}: %w", err)
	}
	a.Server, a.URI = strings.TrimSpace(a.Server), strings.TrimSpace(a.URI)
	if a.Server == "" || a.URI == "" {
		return nil, errors.New("read_resource needs server and uri (see list_resources)")
	}
	if _, ok := g.ups()[a.Server]; !ok {
		return nil, fmt.Errorf("no server is named %q", a.Server)
	}
	rr, err := g.readResource(ctx, ss, a.Server, a.URI)
	if err != nil {
		return nil, fmt.Errorf("reading %s from %s: %w", a.URI, a.Server, err)
	}
	res := &mcp.CallToolResult{}
	for _, c := range rr.Contents {
		if c == nil {
			continue
		}
		switch {
		case c.Blob != nil:
			res.Content = append(res.Content, &mcp.EmbeddedResource{Resource: c})
		default:
			res.Content = append(res.Content, &mcp.TextContent{Text: c.Text})
		}
	}
	if len(res.Content) == 0 {
		res.Content = []mcp.Content{&mcp.TextContent{Text: "(the resource is empty)"}}
	}
	return res, nil
}
