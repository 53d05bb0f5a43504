package hints

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/internal/sharedtest"
)

func TestParse(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", MaxHintBytes+1)
	many := `["a"` + strings.Repeat(`,"a"`, MaxPerTool) + `]`
	digest := "sha256:" + strings.Repeat("ab", 32)
	tests := []struct {
		name    string
		in      string
		line    int    // of the error; 0 for success
		wantErr string // part of the message
		want    []Entry
	}{
		{name: "two entries and a blank line",
			in:   "{\"id\":\"a/x\",\"hints\":[\" find x \",\"get x\"]}\n\n{\"id\":\"b/y\",\"hints\":[\"y\"],\"digest\":\"" + digest + "\",\"extra\":1}\n",
			want: []Entry{{ID: "a/x", Hints: []string{"find x", "get x"}}, {ID: "b/y", Hints: []string{"y"}, Digest: digest}}},
		{name: "byte order mark and CRLF", in: "\xef\xbb\xbf{\"id\":\"a/x\",\"hints\":[\"x\"]}\r\n",
			want: []Entry{{ID: "a/x", Hints: []string{"x"}}}},
		{name: "empty file", in: "", want: nil},
		{name: "not JSON", in: `{"id":"a/x","hints":["x"]}` + "\nnot json\n", line: 2, wantErr: "not a JSON object"},
		{name: "array line", in: `["a/x"]`, line: 1, wantErr: "not a JSON object"},
		{name: "null line", in: `null`, line: 1, wantErr: "not a JSON object"},
		{name: "missing id", in: `{"hints":["x"]}`, line: 1, wantErr: `missing "id"`},
		{name: "id not a string", in: `{"id":7,"hints":["x"]}`, line: 1, wantErr: `"id" is not a string (a number)`},
		{name: "id without server", in: `{"id":"x","hints":["x"]}`, line: 1, wantErr: `not "<server>/<tool>"`},
		{name: "empty id", in: `{"id":"","hints":["x"]}`, line: 1, wantErr: `"id" is empty`},
		{name: "missing hints", in: `{"id":"a/x"}`, line: 1, wantErr: `missing "hints"`},
		{name: "hints not a list", in: `{"id":"a/x","hints":"x"}`, line: 1, wantErr: `"hints" is not a list (a string)`},
		{name: "hints null", in: `{"id":"a/x","hints":null}`, line: 1, wantErr: `"hints" is not a list (null)`},
		{name: "no hints", in: `{"id":"a/x","hints":[]}`, line: 1, wantErr: "no hints"},
		{name: "hint not a string", in: `{"id":"a/x","hints":["ok",{"x":1}]}`, line: 1, wantErr: "hint 2 is not a string (an object)"},
		{name: "empty hint", in: `{"id":"a/x","hints":["ok","  "]}`, line: 1, wantErr: "hint 2: empty"},
		{name: "hint too long", in: `{"id":"a/x","hints":["` + long + `"]}`, line: 1, wantErr: fmt.Sprintf("hint 1: %d bytes; at most %d", MaxHintBytes+1, MaxHintBytes)},
		{name: "control character", in: `{"id":"a/x","hints":["a\u0007b"]}`, line: 1, wantErr: "control character U+0007"},
		{name: "newline inside", in: `{"id":"a/x","hints":["a\nb"]}`, line: 1, wantErr: "control character U+000A"},
		{name: "too many hints", in: `{"id":"a/x","hints":` + many + `}`, line: 1, wantErr: fmt.Sprintf("%d hints; at most %d", MaxPerTool+1, MaxPerTool)},
		{name: "bad digest", in: `{"id":"a/x","hints":["x"],"digest":"md5:00"}`, line: 1, wantErr: "digest"},
		{name: "digest not a string", in: `{"id":"a/x","hints":["x"],"digest":5}`, line: 1, wantErr: `"digest" is not a string`},
		{name: "duplicate id", in: "{\"id\":\"a/x\",\"hints\":[\"x\"]}\n{\"id\":\"b/y\",\"hints\":[\"y\"]}\n{\"id\":\"a/x\",\"hints\":[\"z\"]}\n",
			line: 3, wantErr: "duplicate id: line 1 has it too"},
		{name: "line too long", in: `{"id":"a/x","hints":["` + strings.Repeat("y", maxLineBytes) + `"]}`, line: 1, wantErr: "longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse([]byte(tt.in))
			if tt.line == 0 {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if got := s.Entries(); !entriesEqual(got, tt.want) {
					t.Fatalf("entries = %+v, want %+v", got, tt.want)
				}
				return
			}
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("Parse = %v, want a *LineError", err)
			}
			if le.Line != tt.line || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %q (line %d), want line %d with %q", err, le.Line, tt.line, tt.wantErr)
			}
			if !strings.HasPrefix(err.Error(), fmt.Sprintf("line %d", tt.line)) {
				t.Errorf("error %q does not start with its line", err)
			}
		})
	}
}

func entriesEqual(a, b []Entry) bool {
	return slices.EqualFunc(a, b, func(x, y Entry) bool {
		return x.ID == y.ID && x.Digest == y.Digest && slices.Equal(x.Hints, y.Hints)
	})
}

func TestLineErrorNamesTheTool(t *testing.T) {
	t.Parallel()
	_, err := Parse([]byte(`{"id":"github/create_issue","hints":[1]}`))
	if err == nil || !strings.Contains(err.Error(), "github/create_issue") {
		t.Fatalf("error %v does not name the tool", err)
	}
}

func TestLoadTooLarge(t *testing.T) { // not parallel: it lowers the bound
	defer func(n int) { maxFileBytes = n }(maxFileBytes)
	maxFileBytes = 1000
	if _, err := Load(strings.NewReader(strings.Repeat("\n", 1000))); err != nil {
		t.Fatalf("a file at the bound: %v", err)
	}
	r := strings.NewReader(strings.Repeat("\n", 1001))
	if _, err := Load(r); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Load = %v, want ErrTooLarge", err)
	}
}

func TestLoadFileRefusesADirectory(t *testing.T) {
	t.Parallel()
	if _, err := LoadFile(t.TempDir()); err == nil {
		t.Fatal("LoadFile of a folder succeeded")
	}
}

func tool(t testing.TB, server, def string) *catalog.Tool {
	t.Helper()
	tl, err := catalog.ParseTool(server, json.RawMessage(def))
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

func TestDigest(t *testing.T) {
	t.Parallel()
	base := tool(t, "s", `{"name":"x","description":"make an x","inputSchema":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"number","minimum":1.5}}}}`)
	tests := []struct {
		name string
		def  string
		same bool
	}{
		{"keys reordered and indented", "{\n  \"inputSchema\": {\"properties\": {\"b\": {\"minimum\": 1.5, \"type\": \"number\"}, \"a\": {\"type\": \"string\"}},\n \"type\": \"object\"},\n \"description\": \"make an x\", \"name\": \"x\"}", true},
		{"other server", `{"name":"x","description":"make an x","inputSchema":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"number","minimum":1.5}}}}`, true},
		{"title and annotations do not count", `{"name":"x","title":"X!","annotations":{"readOnlyHint":true},"description":"make an x","inputSchema":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"number","minimum":1.5}}}}`, true},
		{"description changed", `{"name":"x","description":"make a y","inputSchema":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"number","minimum":1.5}}}}`, false},
		{"name changed", `{"name":"x2","description":"make an x","inputSchema":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"number","minimum":1.5}}}}`, false},
		{"schema changed", `{"name":"x","description":"make an x","inputSchema":{"type":"object","properties":{"a":{"type":"string"}}}}`, false},
		{"number changed", `{"name":"x","description":"make an x","inputSchema":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"number","minimum":2.5}}}}`, false},
		{"no schema", `{"name":"x","description":"make an x"}`, false},
	}
	d0 := Digest(base)
	if !validDigest(d0) {
		t.Fatalf("Digest = %q, not a valid digest", d0)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			server := "s"
			if tt.name == "other server" {
				server = "other"
			}
			d := Digest(tool(t, server, tt.def))
			if (d == d0) != tt.same {
				t.Errorf("digest equal = %v, want %v", d == d0, tt.same)
			}
		})
	}
	// A schema that is not JSON still digests, and differently from a
	// JSON string that holds the same text.
	bad := &catalog.Tool{Server: "s", Name: "x", InputSchema: json.RawMessage(`{not json`)}
	str := &catalog.Tool{Server: "s", Name: "x", InputSchema: json.RawMessage(`"{not json"`)}
	if Digest(bad) == Digest(str) || !validDigest(Digest(bad)) {
		t.Errorf("invalid schema digest %q vs string schema %q", Digest(bad), Digest(str))
	}
}

func snapshot(t testing.TB) *catalog.Snapshot {
	t.Helper()
	s, err := catalog.Load(strings.NewReader(`{
	 "gh": [{"name":"create_issue","description":"Create an issue"},{"name":"list_prs","description":"List pull requests"}],
	 "slack": [{"name":"post","description":"Post a message"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestApply(t *testing.T) {
	t.Parallel()
	snap := snapshot(t)
	issue, _ := snap.Tool("gh/create_issue")
	prs, _ := snap.Tool("gh/list_prs")
	set := New()
	for _, e := range []Entry{
		{ID: "gh/create_issue", Hints: []string{"file a bug"}, Digest: Digest(issue)},
		{ID: "gh/list_prs", Hints: []string{"stale one"}, Digest: Digest(tool(t, "gh", `{"name":"list_prs","description":"old text"}`))},
		{ID: "slack/post", Hints: []string{"send a chat message", "dm someone"}}, // no digest: always applies
		{ID: "jira/create", Hints: []string{"not here"}},
	} {
		if err := set.Put(e); err != nil {
			t.Fatal(err)
		}
	}
	next, rep, err := set.Apply(snap)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Entries != 4 || rep.Applied != 2 || !slices.Equal(rep.Stale, []string{"gh/list_prs"}) || !slices.Equal(rep.Unknown, []string{"jira/create"}) {
		t.Errorf("report = %+v", rep)
	}
	if next.Version() != snap.Version()+1 {
		t.Errorf("version %d, want %d", next.Version(), snap.Version()+1)
	}
	want := map[string][]string{"gh/create_issue": {"file a bug"}, "gh/list_prs": nil, "slack/post": {"send a chat message", "dm someone"}}
	for id, w := range want {
		got, _ := next.Tool(id)
		if !slices.Equal(got.Hints, w) {
			t.Errorf("%s: hints %q, want %q", id, got.Hints, w)
		}
		old, _ := snap.Tool(id)
		if old.Hints != nil {
			t.Errorf("%s: the original snapshot's tool got hints %q", id, old.Hints)
		}
	}
	if prs.Hints != nil {
		t.Error("stale hints were applied")
	}
	// Nothing to apply: the same snapshot comes back.
	same, rep, err := New().Apply(snap)
	if err != nil || same != snap || rep.Applied != 0 {
		t.Errorf("empty set: %v %v %+v", same == snap, err, rep)
	}
}

func TestApplyServer(t *testing.T) {
	t.Parallel()
	srv, err := catalog.NewServer("gh", []json.RawMessage{json.RawMessage(`{"name":"a","description":"A"}`), json.RawMessage(`{"name":"b"}`)}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	set := New()
	_ = set.Put(Entry{ID: "gh/a", Hints: []string{"x"}, Digest: Digest(srv.Tools[0])})
	_ = set.Put(Entry{ID: "gh/b", Hints: []string{"y"}, Digest: Digest(srv.Tools[0])}) // a's digest: stale for b
	n, stale := set.ApplyServer(srv)
	if n != 1 || !slices.Equal(stale, []string{"gh/b"}) || !slices.Equal(srv.Tools[0].Hints, []string{"x"}) || srv.Tools[1].Hints != nil {
		t.Errorf("applied %d stale %q hints %q %q", n, stale, srv.Tools[0].Hints, srv.Tools[1].Hints)
	}
}

func TestPutChecks(t *testing.T) {
	t.Parallel()
	s := New()
	if err := s.Put(Entry{ID: "a/x", Hints: []string{""}}); err == nil {
		t.Error("Put took an empty hint")
	}
	if err := s.Put(Entry{ID: "a/x", Hints: []string{"one"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(Entry{ID: "a/x", Hints: []string{"two"}}); err != nil {
		t.Fatal(err)
	}
	if e, _ := s.Get("a/x"); s.Len() != 1 || !slices.Equal(e.Hints, []string{"two"}) {
		t.Errorf("after replacing: %d entries, %q", s.Len(), e.Hints)
	}
}

func TestWriteFileRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "hints.jsonl")
	s := New()
	_ = s.Put(Entry{ID: "a/x", Hints: []string{"<html> & stuff", "ünïcode"}, Digest: "sha256:" + strings.Repeat("0", 64)})
	_ = s.Put(Entry{ID: "b/y", Hints: []string{"y"}})
	if err := WriteFile(path, s); err != nil {
		t.Fatal(err)
	}
	back, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !entriesEqual(back.Entries(), s.Entries()) {
		t.Errorf("read back %+v, want %+v", back.Entries(), s.Entries())
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), "<html> & stuff") || strings.Count(string(data), "\n") != 2 {
		t.Errorf("file:\n%s", data)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "sub", ".*tmp"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %q", left)
	}
}

func TestCache(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "hints.jsonl")
	snap := snapshot(t)
	issue, _ := snap.Tool("gh/create_issue")
	c, err := OpenCache(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Current(issue) {
		t.Fatal("an empty cache holds the tool")
	}
	if err := c.Put(Entry{ID: issue.ID(), Hints: []string{"file a bug"}, Digest: Digest(issue)}); err != nil {
		t.Fatal(err)
	}
	// A refused entry writes nothing and keeps the rest.
	if err := c.Put(Entry{ID: "gh/list_prs", Hints: []string{"ok"}}, Entry{ID: "slack/post", Hints: []string{""}}); err == nil {
		t.Fatal("Put took an empty hint")
	}
	c2, err := OpenCache(path)
	if err != nil {
		t.Fatal(err)
	}
	if !c2.Current(issue) || c2.Set().Len() != 1 {
		t.Fatalf("reopened cache: current %v, %d entries", c2.Current(issue), c2.Set().Len())
	}
	changed := tool(t, "gh", `{"name":"create_issue","description":"Create an issue, now with labels"}`)
	if c2.Current(changed) {
		t.Error("a changed definition counts as current")
	}
	// A file that cannot be read is never written over.
	if err := os.WriteFile(path, []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenCache(path); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("OpenCache of a broken file = %v", err)
	}
}

// TestSharedHints loads the shared catalog's hints file and applies it to
// the shared catalog.
func TestSharedHints(t *testing.T) {
	t.Parallel()
	set, err := LoadFile(sharedtest.HintsPath(t))
	if err != nil {
		t.Fatalf("the shared hints file does not load: %v", err)
	}
	snap := sharedtest.Catalog(t)
	next, rep, err := set.Apply(snap)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("shared hints: %s", rep)
	if len(rep.Unknown) > 0 || len(rep.Stale) > 0 || rep.Applied != set.Len() {
		t.Errorf("report %s; unknown %q", rep, rep.Unknown[:min(5, len(rep.Unknown))])
	}
	n := 0
	for _, tl := range next.Tools() {
		if len(tl.Hints) > 0 {
			n++
		}
	}
	if n != rep.Applied {
		t.Errorf("%d tools have hints, the report says %d", n, rep.Applied)
	}
}
