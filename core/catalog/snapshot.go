package catalog

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Server is one source of tools: an MCP server, or a group of built-in tools.
// A Server is immutable once it is part of a Snapshot.
type Server struct {
	// Key is the short name that identifies the server, as a user names it in
	// an mcpServers configuration. It is unique within a snapshot.
	Key string
	// Title is the name the server reports for itself, if any.
	Title string
	// Package names the package the server comes from, if known.
	Package string
	// Version is the server's or package's version, if known.
	Version string
	// Keywords are extra search words supplied by the operator for every tool
	// of the server.
	Keywords []string
	// AlwaysLoad marks every tool of the server as never deferred.
	AlwaysLoad bool
	// Tools are the server's tools in the order the server listed them.
	Tools []*Tool
}

// ValidKey reports whether key can name a server: non-empty, no white space,
// and free of the separators used in tool IDs and wire names.
func ValidKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("server key is empty")
	case strings.Contains(key, IDSeparator):
		return fmt.Errorf("server key %q contains %q", key, IDSeparator)
	case strings.Contains(key, WireSeparator):
		return fmt.Errorf("server key %q contains %q", key, WireSeparator)
	case strings.ContainsAny(key, " \t\r\n"):
		return fmt.Errorf("server key %q contains white space", key)
	case strings.HasSuffix(key, "_"):
		// "a_" + "__" + "b" would read as "a" + "__" + "_b".
		return fmt.Errorf("server key %q ends with \"_\"", key)
	}
	return nil
}

// Snapshot is an immutable, versioned view of every known server and tool.
// Its methods are safe for concurrent use.
type Snapshot struct {
	version uint64
	servers []*Server // sorted by key
	tools   []*Tool   // servers in key order, tools in listed order
	byID    map[string]*Tool
}

// MaxTools is the most tools a snapshot may hold (64 Mi). The search index
// numbers tools in 27 bits.
const MaxTools = 1 << 26

// maxTools is MaxTools; tests lower it.
var maxTools = MaxTools

// Empty is the snapshot with no servers, at version 0.
var Empty = &Snapshot{byID: map[string]*Tool{}}

// NewSnapshot builds a version-1 snapshot from servers. Server keys must be
// valid and unique; tool names must be unique within a server.
func NewSnapshot(servers ...*Server) (*Snapshot, error) {
	changes := make([]Change, len(servers))
	seen := make(map[string]bool, len(servers))
	for i, s := range servers {
		if s == nil {
			return nil, fmt.Errorf("server %d is nil", i)
		}
		if seen[s.Key] {
			return nil, fmt.Errorf("duplicate server key %q", s.Key)
		}
		seen[s.Key] = true
		changes[i] = Put(s)
	}
	s, _, err := Empty.Apply(changes...)
	return s, err
}

// Version is the snapshot's version; each applied change increments it.
func (s *Snapshot) Version() uint64 { return s.version }

// Servers returns the servers in key order. The slice must not be modified.
func (s *Snapshot) Servers() []*Server { return s.servers }

// Tools returns every tool, servers in key order. The slice must not be
// modified.
func (s *Snapshot) Tools() []*Tool { return s.tools }

// Tool returns the tool with the given ID ("server/name").
func (s *Snapshot) Tool(id string) (*Tool, bool) {
	t, ok := s.byID[id]
	return t, ok
}

// Server returns the server with the given key.
func (s *Snapshot) Server(key string) (*Server, bool) {
	i, ok := slices.BinarySearchFunc(s.servers, key, func(a *Server, k string) int { return strings.Compare(a.Key, k) })
	if !ok {
		return nil, false
	}
	return s.servers[i], true
}

// Change is one edit to a snapshot: a server put (added, or its tool list
// replaced) or removed.
type Change struct {
	server *Server
	remove string
}

// Put is the change that adds srv, or replaces the server with the same key.
func Put(srv *Server) Change { return Change{server: srv} }

// Remove is the change that removes the server with the given key.
func Remove(key string) Change { return Change{remove: key} }

// Diff says what a change did, by tool ID.
type Diff struct {
	From, To uint64
	Added    []string
	Removed  []string
	Changed  []string
	// Servers are the keys of the servers the change touched.
	Servers []string
}

// Empty reports whether the diff changes no tool.
func (d Diff) Empty() bool { return len(d.Added)+len(d.Removed)+len(d.Changed) == 0 }

// Apply returns a new snapshot with the changes applied in order, and the
// diff from s to it. s itself is unchanged. On error no change is applied.
func (s *Snapshot) Apply(changes ...Change) (*Snapshot, Diff, error) {
	byKey := make(map[string]*Server, len(s.servers)+len(changes))
	for _, srv := range s.servers {
		byKey[srv.Key] = srv
	}
	touched := map[string]bool{}
	for _, c := range changes {
		if c.server == nil {
			if _, ok := byKey[c.remove]; !ok {
				return nil, Diff{}, fmt.Errorf("remove server %q: no such server", c.remove)
			}
			delete(byKey, c.remove)
			touched[c.remove] = true
			continue
		}
		if err := checkServer(c.server); err != nil {
			return nil, Diff{}, err
		}
		byKey[c.server.Key] = c.server
		touched[c.server.Key] = true
	}
	n := 0
	for _, srv := range byKey {
		n += len(srv.Tools)
	}
	if n > maxTools {
		return nil, Diff{}, fmt.Errorf("the catalog would hold %d tools; the limit is %d", n, maxTools)
	}
	next := &Snapshot{version: s.version + 1, byID: make(map[string]*Tool, len(s.tools))}
	for _, srv := range byKey {
		next.servers = append(next.servers, srv)
	}
	sort.Slice(next.servers, func(i, j int) bool { return next.servers[i].Key < next.servers[j].Key })
	for _, srv := range next.servers {
		for _, t := range srv.Tools {
			next.tools = append(next.tools, t)
			next.byID[t.ID()] = t
		}
	}
	d := Diff{From: s.version, To: next.version}
	for k := range touched {
		d.Servers = append(d.Servers, k)
	}
	sort.Strings(d.Servers)
	for _, k := range d.Servers {
		if old, ok := s.Server(k); ok {
			for _, t := range old.Tools {
				nt, ok := next.byID[t.ID()]
				switch {
				case !ok:
					d.Removed = append(d.Removed, t.ID())
				case !sameTool(t, nt):
					d.Changed = append(d.Changed, t.ID())
				}
			}
		}
		if srv, ok := byKey[k]; ok {
			for _, t := range srv.Tools {
				if _, ok := s.byID[t.ID()]; !ok {
					d.Added = append(d.Added, t.ID())
				}
			}
		}
	}
	return next, d, nil
}

func checkServer(srv *Server) error {
	if err := ValidKey(srv.Key); err != nil {
		return err
	}
	seen := make(map[string]bool, len(srv.Tools))
	for i, t := range srv.Tools {
		if t == nil {
			return fmt.Errorf("server %q: tool %d is nil", srv.Key, i)
		}
		if t.Server != srv.Key {
			return fmt.Errorf("server %q: tool %q belongs to server %q", srv.Key, t.Name, t.Server)
		}
		if strings.TrimSpace(t.Name) == "" {
			return fmt.Errorf("server %q: tool %d has no name", srv.Key, i)
		}
		if seen[t.Name] {
			return fmt.Errorf("server %q: duplicate tool name %q", srv.Key, t.Name)
		}
		seen[t.Name] = true
	}
	return nil
}

// sameTool reports whether two definitions of a tool are the same as far as
// a client can tell.
func sameTool(a, b *Tool) bool {
	if a == b {
		return true
	}
	if len(a.Raw) > 0 || len(b.Raw) > 0 {
		return bytes.Equal(a.Raw, b.Raw) && a.AlwaysLoad == b.AlwaysLoad && slices.Equal(a.Keywords, b.Keywords)
	}
	return a.Name == b.Name && a.Title == b.Title && a.Description == b.Description &&
		bytes.Equal(a.InputSchema, b.InputSchema) && bytes.Equal(a.OutputSchema, b.OutputSchema) &&
		bytes.Equal(a.Annotations, b.Annotations) && bytes.Equal(a.Meta, b.Meta) &&
		a.AlwaysLoad == b.AlwaysLoad && slices.Equal(a.Keywords, b.Keywords)
}

// Catalog holds the current snapshot and applies changes to it one at a time.
// Readers call Snapshot and keep what they get for as long as they need a
// consistent view. Its methods are safe for concurrent use.
type Catalog struct {
	mu  sync.Mutex // serialises writers
	cur atomic.Pointer[Snapshot]
}

// New returns a catalog whose current snapshot is s (Empty when nil).
func New(s *Snapshot) *Catalog {
	if s == nil {
		s = Empty
	}
	c := &Catalog{}
	c.cur.Store(s)
	return c
}

// Snapshot returns the current snapshot.
func (c *Catalog) Snapshot() *Snapshot { return c.cur.Load() }

// Apply applies the changes atomically and returns the new snapshot and the
// diff. On error the current snapshot stays as it was.
func (c *Catalog) Apply(changes ...Change) (*Snapshot, Diff, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	next, d, err := c.cur.Load().Apply(changes...)
	if err != nil {
		return nil, Diff{}, err
	}
	c.cur.Store(next)
	return next, d, nil
}
