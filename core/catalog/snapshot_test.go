package catalog

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// fingerprint records everything observable about a snapshot, so a test can
// tell that it did not change.
func fingerprint(s *Snapshot) string {
	var b strings.Builder
	fmt.Fprintf(&b, "v%d;", s.Version())
	for _, srv := range s.Servers() {
		fmt.Fprintf(&b, "%s[%p]{", srv.Key, srv)
		for _, t := range srv.Tools {
			fmt.Fprintf(&b, "%s=%p=%s,", t.Name, t, t.Raw)
		}
		b.WriteString("};")
	}
	for _, t := range s.Tools() {
		got, ok := s.Tool(t.ID())
		fmt.Fprintf(&b, "%s:%p:%v;", t.ID(), got, ok)
	}
	return b.String()
}

// checkConsistent reports what is wrong with a snapshot's internal
// consistency: servers sorted and unique, Tools() the concatenation of the
// servers' tools, every tool reachable by ID and every server by key.
func checkConsistent(s *Snapshot) error {
	var want []*Tool
	for i, srv := range s.Servers() {
		if i > 0 && s.Servers()[i-1].Key >= srv.Key {
			return fmt.Errorf("v%d: servers out of order: %q before %q", s.Version(), s.Servers()[i-1].Key, srv.Key)
		}
		if got, ok := s.Server(srv.Key); !ok || got != srv {
			return fmt.Errorf("v%d: Server(%q) = %p, %v; want %p", s.Version(), srv.Key, got, ok, srv)
		}
		want = append(want, srv.Tools...)
	}
	if !slices.Equal(s.Tools(), want) {
		return fmt.Errorf("v%d: Tools() has %d tools, servers have %d", s.Version(), len(s.Tools()), len(want))
	}
	for _, t := range s.Tools() {
		got, ok := s.Tool(t.ID())
		if !ok || got != t {
			return fmt.Errorf("v%d: Tool(%q) = %p, %v; want %p", s.Version(), t.ID(), got, ok, t)
		}
	}
	return nil
}

func toolIDs(s *Snapshot) []string {
	var ids []string
	for _, t := range s.Tools() {
		ids = append(ids, t.ID())
	}
	return ids
}

func TestEmptyAndNewSnapshot(t *testing.T) {
	t.Parallel()
	if Empty.Version() != 0 || len(Empty.Servers()) != 0 || len(Empty.Tools()) != 0 {
		t.Errorf("Empty = v%d with %d servers, %d tools", Empty.Version(), len(Empty.Servers()), len(Empty.Tools()))
	}
	if _, ok := Empty.Tool("a/b"); ok {
		t.Error("Empty.Tool found something")
	}
	if _, ok := Empty.Server("a"); ok {
		t.Error("Empty.Server found something")
	}

	s, err := NewSnapshot(
		mustServer(t, "zed", `{"name":"z1"}`),
		mustServer(t, "alpha", `{"name":"a2"}`, `{"name":"a1"}`),
		mustServer(t, "mid"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if s.Version() != 1 {
		t.Errorf("Version() = %d, want 1", s.Version())
	}
	if err := checkConsistent(s); err != nil {
		t.Error(err)
	}
	// Servers in key order, tools in listed order.
	if got, want := toolIDs(s), []string{"alpha/a2", "alpha/a1", "zed/z1"}; !slices.Equal(got, want) {
		t.Errorf("tools = %v, want %v", got, want)
	}
	if _, ok := s.Server("mid"); !ok {
		t.Error("a server without tools is still a server")
	}
	if _, ok := s.Tool("alpha/nope"); ok {
		t.Error("Tool found a tool that does not exist")
	}
	if _, ok := s.Server("beta"); ok {
		t.Error("Server found a server that does not exist")
	}

	empty, err := NewSnapshot()
	if err != nil || empty.Version() != 1 || len(empty.Servers()) != 0 {
		t.Errorf("NewSnapshot() = %v, %v", empty, err)
	}
	if Empty.Version() != 0 || len(Empty.Servers()) != 0 {
		t.Error("NewSnapshot changed Empty")
	}
}

func TestSnapshotApply(t *testing.T) {
	t.Parallel()
	base := func(t *testing.T) *Snapshot {
		s, err := NewSnapshot(
			mustServer(t, "alpha", `{"name":"a1","description":"one"}`, `{"name":"a2","description":"two"}`),
			mustServer(t, "beta", `{"name":"b1"}`, `{"name":"b2"}`, `{"name":"b3"}`),
		)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	type diff struct{ Added, Removed, Changed, Servers []string }
	tests := []struct {
		name    string
		changes func(t *testing.T) []Change
		tools   []string // tool IDs of the new snapshot
		diff    diff
	}{
		{
			name:    "no changes",
			changes: func(*testing.T) []Change { return nil },
			tools:   []string{"alpha/a1", "alpha/a2", "beta/b1", "beta/b2", "beta/b3"},
		},
		{
			name: "put a new server",
			changes: func(t *testing.T) []Change {
				return []Change{Put(mustServer(t, "aardvark", `{"name":"x"}`, `{"name":"y"}`))}
			},
			tools: []string{"aardvark/x", "aardvark/y", "alpha/a1", "alpha/a2", "beta/b1", "beta/b2", "beta/b3"},
			diff:  diff{Added: []string{"aardvark/x", "aardvark/y"}, Servers: []string{"aardvark"}},
		},
		{
			name: "replace a server: one tool kept, one changed, one removed, one added",
			changes: func(t *testing.T) []Change {
				return []Change{Put(mustServer(t, "alpha",
					`{"name":"a3"}`,
					`{"name":"a2","description":"two"}`,
					`{"name":"a1","description":"one, reworded"}`))}
			},
			tools: []string{"alpha/a3", "alpha/a2", "alpha/a1", "beta/b1", "beta/b2", "beta/b3"},
			diff:  diff{Added: []string{"alpha/a3"}, Changed: []string{"alpha/a1"}, Servers: []string{"alpha"}},
		},
		{
			name: "replace with identical definitions",
			changes: func(t *testing.T) []Change {
				return []Change{Put(mustServer(t, "beta", `{"name":"b1"}`, `{"name":"b2"}`, `{"name":"b3"}`))}
			},
			tools: []string{"alpha/a1", "alpha/a2", "beta/b1", "beta/b2", "beta/b3"},
			diff:  diff{Servers: []string{"beta"}},
		},
		{
			name: "white space in a definition is a change",
			changes: func(t *testing.T) []Change {
				return []Change{Put(mustServer(t, "beta", `{"name":"b1"}`, `{"name": "b2"}`, `{"name":"b3"}`))}
			},
			tools: []string{"alpha/a1", "alpha/a2", "beta/b1", "beta/b2", "beta/b3"},
			diff:  diff{Changed: []string{"beta/b2"}, Servers: []string{"beta"}},
		},
		{
			name: "keywords and alwaysLoad are changes",
			changes: func(t *testing.T) []Change {
				srv, err := NewServer("beta", []json.RawMessage{[]byte(`{"name":"b1"}`), []byte(`{"name":"b2"}`), []byte(`{"name":"b3"}`)}, nil, true)
				if err != nil {
					t.Fatal(err)
				}
				srv.Tools[1].AlwaysLoad = false
				srv.Tools[2].AlwaysLoad = false
				srv.Tools[2].Keywords = []string{"new"}
				return []Change{Put(srv)}
			},
			tools: []string{"alpha/a1", "alpha/a2", "beta/b1", "beta/b2", "beta/b3"},
			diff:  diff{Changed: []string{"beta/b1", "beta/b3"}, Servers: []string{"beta"}},
		},
		{
			name:    "remove a server",
			changes: func(*testing.T) []Change { return []Change{Remove("beta")} },
			tools:   []string{"alpha/a1", "alpha/a2"},
			diff:    diff{Removed: []string{"beta/b1", "beta/b2", "beta/b3"}, Servers: []string{"beta"}},
		},
		{
			name:    "remove every server",
			changes: func(*testing.T) []Change { return []Change{Remove("beta"), Remove("alpha")} },
			diff:    diff{Removed: []string{"alpha/a1", "alpha/a2", "beta/b1", "beta/b2", "beta/b3"}, Servers: []string{"alpha", "beta"}},
		},
		{
			name: "several changes in one go",
			changes: func(t *testing.T) []Change {
				return []Change{
					Remove("alpha"),
					Put(mustServer(t, "gamma", `{"name":"g1"}`)),
					Put(mustServer(t, "beta", `{"name":"b1"}`)),
				}
			},
			tools: []string{"beta/b1", "gamma/g1"},
			diff: diff{
				Added:   []string{"gamma/g1"},
				Removed: []string{"alpha/a1", "alpha/a2", "beta/b2", "beta/b3"},
				Servers: []string{"alpha", "beta", "gamma"},
			},
		},
		{
			name: "later changes win: put then remove",
			changes: func(t *testing.T) []Change {
				return []Change{Put(mustServer(t, "gamma", `{"name":"g1"}`)), Remove("gamma")}
			},
			tools: []string{"alpha/a1", "alpha/a2", "beta/b1", "beta/b2", "beta/b3"},
			diff:  diff{Servers: []string{"gamma"}},
		},
		{
			name: "later changes win: remove then put back",
			changes: func(t *testing.T) []Change {
				return []Change{Remove("alpha"), Put(mustServer(t, "alpha", `{"name":"a1","description":"one"}`))}
			},
			tools: []string{"alpha/a1", "beta/b1", "beta/b2", "beta/b3"},
			diff:  diff{Removed: []string{"alpha/a2"}, Servers: []string{"alpha"}},
		},
		{
			name: "later changes win: two puts",
			changes: func(t *testing.T) []Change {
				return []Change{Put(mustServer(t, "gamma", `{"name":"g1"}`)), Put(mustServer(t, "gamma", `{"name":"g2"}`))}
			},
			tools: []string{"alpha/a1", "alpha/a2", "beta/b1", "beta/b2", "beta/b3", "gamma/g2"},
			diff:  diff{Added: []string{"gamma/g2"}, Servers: []string{"gamma"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			old := base(t)
			before := fingerprint(old)
			next, d, err := old.Apply(tc.changes(t)...)
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if after := fingerprint(old); after != before {
				t.Errorf("Apply changed the old snapshot:\nbefore %s\nafter  %s", before, after)
			}
			if next == old {
				t.Error("Apply returned the old snapshot")
			}
			if next.Version() != old.Version()+1 || d.From != old.Version() || d.To != next.Version() {
				t.Errorf("versions: old %d, new %d, diff %d→%d", old.Version(), next.Version(), d.From, d.To)
			}
			if err := checkConsistent(next); err != nil {
				t.Error(err)
			}
			if got := toolIDs(next); !slices.Equal(got, tc.tools) {
				t.Errorf("tools = %v\nwant %v", got, tc.tools)
			}
			got := diff{d.Added, d.Removed, d.Changed, d.Servers}
			norm := func(d diff) diff {
				for _, p := range []*[]string{&d.Added, &d.Removed, &d.Changed, &d.Servers} {
					if len(*p) == 0 {
						*p = nil
					} else {
						*p = slices.Sorted(slices.Values(*p))
					}
				}
				return d
			}
			if !reflect.DeepEqual(norm(got), norm(tc.diff)) {
				t.Errorf("diff = %+v\nwant %+v", got, tc.diff)
			}
			if !slices.IsSorted(d.Servers) {
				t.Errorf("Diff.Servers not sorted: %v", d.Servers)
			}
			if d.Empty() != (len(tc.diff.Added)+len(tc.diff.Removed)+len(tc.diff.Changed) == 0) {
				t.Errorf("Diff.Empty() = %v", d.Empty())
			}
			// Every added or changed tool is in the new snapshot; every
			// removed one is gone.
			for _, id := range append(slices.Clone(d.Added), d.Changed...) {
				if _, ok := next.Tool(id); !ok {
					t.Errorf("%s added or changed but not in the new snapshot", id)
				}
			}
			for _, id := range d.Removed {
				if _, ok := next.Tool(id); ok {
					t.Errorf("%s removed but still in the new snapshot", id)
				}
				if _, ok := old.Tool(id); !ok {
					t.Errorf("%s removed but not in the old snapshot", id)
				}
			}
		})
	}
}

func TestSnapshotApplyChain(t *testing.T) {
	t.Parallel()
	s := Empty
	for i := range 5 {
		next, d, err := s.Apply(Put(mustServer(t, fmt.Sprintf("s%d", i), `{"name":"t"}`)))
		if err != nil {
			t.Fatal(err)
		}
		if next.Version() != uint64(i+1) || d.From != uint64(i) || d.To != uint64(i+1) {
			t.Fatalf("step %d: version %d, diff %d→%d", i, next.Version(), d.From, d.To)
		}
		if len(next.Tools()) != i+1 || len(s.Tools()) != i {
			t.Fatalf("step %d: %d tools, previous snapshot %d", i, len(next.Tools()), len(s.Tools()))
		}
		s = next
	}
}

func TestSnapshotApplyErrors(t *testing.T) {
	t.Parallel()
	good := func(t *testing.T) *Server { return mustServer(t, "good", `{"name":"g"}`) }
	withTools := func(key string, tools ...*Tool) *Server { return &Server{Key: key, Tools: tools} }
	tool := func(server, name string) *Tool { return &Tool{Server: server, Name: name} }
	tests := []struct {
		name    string
		changes func(t *testing.T) []Change
		want    string
	}{
		{
			name: "duplicate tool names",
			changes: func(*testing.T) []Change {
				return []Change{Put(withTools("dup", tool("dup", "x"), tool("dup", "y"), tool("dup", "x")))}
			},
			want: `server "dup": duplicate tool name "x"`,
		},
		{"empty key", func(*testing.T) []Change { return []Change{Put(withTools(""))} }, "server key is empty"},
		{"key with a slash", func(*testing.T) []Change { return []Change{Put(withTools("a/b"))} }, `server key "a/b" contains "/"`},
		{"key with the wire separator", func(*testing.T) []Change { return []Change{Put(withTools("a__b"))} }, `server key "a__b" contains "__"`},
		{"key with a space", func(*testing.T) []Change { return []Change{Put(withTools("a b"))} }, "white space"},
		{"key with a newline", func(*testing.T) []Change { return []Change{Put(withTools("a\nb"))} }, "white space"},
		{"remove an unknown server", func(*testing.T) []Change { return []Change{Remove("nope")} }, `remove server "nope": no such server`},
		{"zero change", func(*testing.T) []Change { return []Change{{}} }, `remove server "": no such server`},
		{
			name:    "nil tool",
			changes: func(*testing.T) []Change { return []Change{Put(withTools("n", tool("n", "a"), nil))} },
			want:    `server "n": tool 1 is nil`,
		},
		{
			name:    "tool of another server",
			changes: func(*testing.T) []Change { return []Change{Put(withTools("mine", tool("theirs", "a")))} },
			want:    `tool "a" belongs to server "theirs"`,
		},
		{
			name:    "tool without a name",
			changes: func(*testing.T) []Change { return []Change{Put(withTools("n", tool("n", "")))} },
			want:    `server "n": tool 0 has no name`,
		},
		{
			name: "a bad change after good ones",
			changes: func(t *testing.T) []Change {
				return []Change{Put(good(t)), Remove("alpha"), Put(withTools("bad key"))}
			},
			want: "white space",
		},
		{
			name: "removing twice",
			changes: func(*testing.T) []Change {
				return []Change{Remove("alpha"), Remove("alpha")}
			},
			want: `remove server "alpha": no such server`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			old, err := NewSnapshot(mustServer(t, "alpha", `{"name":"a1"}`))
			if err != nil {
				t.Fatal(err)
			}
			before := fingerprint(old)
			next, d, err := old.Apply(tc.changes(t)...)
			if err == nil {
				t.Fatalf("Apply succeeded (v%d, %+v), want an error", next.Version(), d)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
			if next != nil || !reflect.DeepEqual(d, Diff{}) {
				t.Errorf("on error Apply returned %v, %+v", next, d)
			}
			if after := fingerprint(old); after != before {
				t.Errorf("failed Apply changed the snapshot:\nbefore %s\nafter  %s", before, after)
			}

			// The same through a Catalog: the current snapshot stays.
			c := New(old)
			next, d, err = c.Apply(tc.changes(t)...)
			if err == nil || next != nil || !reflect.DeepEqual(d, Diff{}) {
				t.Errorf("Catalog.Apply = %v, %+v, %v; want nil, zero diff, error", next, d, err)
			}
			if c.Snapshot() != old {
				t.Error("failed Catalog.Apply replaced the current snapshot")
			}
		})
	}
}

func TestCatalog(t *testing.T) {
	t.Parallel()
	if c := New(nil); c.Snapshot() != Empty {
		t.Error("New(nil).Snapshot() is not Empty")
	}
	c := New(nil)
	s1, d, err := c.Apply(Put(mustServer(t, "a", `{"name":"x"}`)))
	if err != nil {
		t.Fatal(err)
	}
	if c.Snapshot() != s1 || s1.Version() != 1 || d.From != 0 || d.To != 1 {
		t.Errorf("after Apply: current v%d, returned v%d, diff %d→%d", c.Snapshot().Version(), s1.Version(), d.From, d.To)
	}
	s2, _, err := c.Apply(Remove("a"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Snapshot() != s2 || s2.Version() != 2 || len(s2.Tools()) != 0 {
		t.Errorf("after Remove: current v%d with %d tools", c.Snapshot().Version(), len(c.Snapshot().Tools()))
	}
	if len(s1.Tools()) != 1 {
		t.Error("a later Apply changed an earlier snapshot")
	}
}

// TestCatalogConcurrent runs readers against writers; run it with -race.
// Every snapshot a reader gets must be internally consistent, and the
// versions a reader sees must never go backwards.
func TestCatalogConcurrent(t *testing.T) {
	t.Parallel()
	const (
		writers      = 3
		writesEach   = 150
		readers      = 8
		serversInUse = 6
	)
	c := New(nil)
	var done atomic.Bool
	var readerWG sync.WaitGroup
	errs := make(chan error, readers)
	for r := range readers {
		readerWG.Go(func() {
			var last uint64
			reads := 0
			for !done.Load() || reads < 10 {
				reads++
				s := c.Snapshot()
				if s.Version() < last {
					errs <- fmt.Errorf("reader %d: version went from %d back to %d", r, last, s.Version())
					return
				}
				last = s.Version()
				if err := checkConsistent(s); err != nil {
					errs <- fmt.Errorf("reader %d: %w", r, err)
					return
				}
				// Tool counts follow from the server names: server sN has
				// N+1 tools whichever writer put it.
				for _, srv := range s.Servers() {
					var n int
					if _, err := fmt.Sscanf(srv.Key, "s%d", &n); err != nil || len(srv.Tools) != n+1 {
						errs <- fmt.Errorf("reader %d: v%d: server %q has %d tools", r, s.Version(), srv.Key, len(srv.Tools))
						return
					}
				}
			}
		})
	}

	var writerWG sync.WaitGroup
	versions := make(chan uint64, writers*writesEach)
	for w := range writers {
		writerWG.Go(func() {
			for i := range writesEach {
				n := (w*7 + i) % serversInUse
				key := fmt.Sprintf("s%d", n)
				var change Change
				if _, ok := c.Snapshot().Server(key); ok && i%3 == 0 {
					change = Remove(key)
				} else {
					raws := make([]json.RawMessage, n+1)
					for j := range raws {
						raws[j] = fmt.Appendf(nil, `{"name":"t%d","description":"writer %d write %d"}`, j, w, i)
					}
					srv, err := NewServer(key, raws, nil, false)
					if err != nil {
						t.Errorf("writer %d: %v", w, err)
						return
					}
					change = Put(srv)
				}
				next, d, err := c.Apply(change)
				if err != nil {
					// Another writer may have removed the server between
					// the check and the Apply.
					if !strings.Contains(err.Error(), "no such server") {
						t.Errorf("writer %d: %v", w, err)
					}
					continue
				}
				if d.To != d.From+1 || next.Version() != d.To {
					t.Errorf("writer %d: diff %d→%d, snapshot v%d", w, d.From, d.To, next.Version())
				}
				versions <- d.To
			}
		})
	}
	writerWG.Wait()
	done.Store(true)
	readerWG.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	close(versions)

	// Writers are serialised: the versions they produced are exactly
	// 1..n, each once.
	var got []uint64
	for v := range versions {
		got = append(got, v)
	}
	slices.Sort(got)
	for i, v := range got {
		if v != uint64(i+1) {
			t.Fatalf("versions produced by writers: %v... (want 1..%d each once)", got[:i+1], len(got))
		}
	}
	if final := c.Snapshot().Version(); final != uint64(len(got)) {
		t.Errorf("final version %d after %d successful writes", final, len(got))
	}
	if err := checkConsistent(c.Snapshot()); err != nil {
		t.Error(err)
	}
}

// TestSnapshotApplyTooManyTools checks that a change taking the catalog
// past the tool limit is refused with both counts named, and that a change
// reaching the limit exactly is taken. It lowers the limit, so it does not
// run in parallel.
func TestSnapshotApplyTooManyTools(t *testing.T) {
	defer func(n int) { maxTools = n }(maxTools)
	maxTools = 3
	two := mustServer(t, "two", `{"name":"a"}`, `{"name":"b"}`)
	old, err := NewSnapshot(two)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := old.Apply(Put(mustServer(t, "one", `{"name":"c"}`))); err != nil {
		t.Fatalf("reaching the limit: %v", err)
	}
	next, _, err := old.Apply(Put(mustServer(t, "more", `{"name":"c"}`, `{"name":"d"}`)))
	if err == nil {
		t.Fatalf("Apply past the limit gave version %d, want an error", next.Version())
	}
	if want := "the catalog would hold 4 tools; the limit is 3"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}
