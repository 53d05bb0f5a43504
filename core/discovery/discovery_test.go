package discovery

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/core/catalog"
)

func TestSafeName(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 70)
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"github__create_issue", 64, "github__create_issue"},
		{"a.b/c d", 64, "a_b_c_d"},
		{"", 64, "_"},
		{"héllo", 64, "h_llo"},
		{long, 64, strings.Repeat("x", 55) + "_" + hash8(long)},
		{long, 0, long},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got := SafeName(tt.in, tt.max)
			if got != tt.want {
				t.Fatalf("SafeName(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
			}
			if tt.max == MaxNameLen && !validName(got) {
				t.Fatalf("SafeName(%q) = %q is not a valid name", tt.in, got)
			}
		})
	}
}

func snapshot(t testing.TB, servers map[string][]string) *catalog.Snapshot {
	t.Helper()
	var list []*catalog.Server
	for key, names := range servers {
		var raws []json.RawMessage
		for _, n := range names {
			raws = append(raws, json.RawMessage(fmt.Sprintf(`{"name":%q,"description":"does %s","inputSchema":{"type":"object"}}`, n, n)))
		}
		srv, err := catalog.NewServer(key, raws, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, srv)
	}
	snap, err := catalog.NewSnapshot(list...)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func TestNames(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("very_long_tool_name_", 4)
	snap := snapshot(t, map[string][]string{
		"github":  {"create_issue", "list.issues", "list_issues"},
		"hosting": {long + "a", long + "b"},
	})
	for _, prefix := range []string{"", "mcp__"} {
		n := NewNames(snap, prefix)
		seen := map[string]bool{}
		for _, tool := range snap.Tools() {
			w := n.Wire(tool)
			if !validName(w) {
				t.Errorf("wire name %q of %s is not valid", w, tool.ID())
			}
			if seen[w] {
				t.Errorf("wire name %q given twice", w)
			}
			seen[w] = true
			if back, ok := n.Tool(w); !ok || back != tool {
				t.Errorf("Tool(%q) = %v, %v; want %s", w, back, ok, tool.ID())
			}
			if !strings.HasPrefix(w, n.ServerPrefix(tool.Server)) {
				t.Errorf("wire name %q does not start with %q", w, n.ServerPrefix(tool.Server))
			}
		}
		gh, _ := snap.Tool("github/create_issue")
		if got, want := n.Wire(gh), prefix+"github__create_issue"; got != want {
			t.Errorf("Wire = %q, want %q", got, want)
		}
	}
	if _, ok := NewNames(snap, "").Tool("nope"); ok {
		t.Error("Tool(nope) found something")
	}
}

func TestLoadedAndCarry(t *testing.T) {
	t.Parallel()
	events := []Event{
		{Names: []string{"a", "b"}},
		{Names: []string{"b", "c", ""}},
		{Names: []string{"a"}},
		{Names: []string{"d"}},
	}
	got := Loaded(events)
	if want := []string{"a", "b", "c", "d"}; !slices.Equal(got.Names(), want) {
		t.Fatalf("Loaded = %q, want %q", got.Names(), want)
	}
	if !got.Has("c") || got.Has("e") || got.Len() != 4 {
		t.Fatalf("Has/Len wrong: %v", got)
	}
	// Compaction: the boundary carries the set; the kept tail of the
	// conversation may repeat or add tools.
	carry := Carry(events)
	if carry.Kind != Carried {
		t.Fatalf("Carry kind %v", carry.Kind)
	}
	after := append([]Event{carry}, events[3:]...)
	if a, b := Loaded(after).Names(), got.Names(); !slices.Equal(a, b) {
		t.Fatalf("after compaction %q, before %q", a, b)
	}
	// Same history, same set.
	if !slices.Equal(Loaded(events).Names(), got.Names()) {
		t.Fatal("Loaded is not deterministic")
	}
}

func TestLoadedText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		names []string
		text  string
	}{
		{[]string{"github__create_issue", "slack__post"}, "Loaded tools: github__create_issue, slack__post"},
		{nil, ""},
		{[]string{"bad name", "ok"}, "Loaded tools: ok"},
	}
	for _, tt := range tests {
		got := LoadedText(tt.names)
		if got != tt.text {
			t.Errorf("LoadedText(%q) = %q, want %q", tt.names, got, tt.text)
		}
	}
	in := "Found 2 tools.\nLoaded tools: a__x, b__y\r\nsome text\nLoaded tools: c__z,  , bad name\n"
	if got, want := ParseLoadedText(in), []string{"a__x", "b__y", "c__z"}; !slices.Equal(got, want) {
		t.Fatalf("ParseLoadedText = %q, want %q", got, want)
	}
}

func FuzzLoadedText(f *testing.F) {
	f.Add("Loaded tools: a__b, c__d")
	f.Add("x\nLoaded tools: \n")
	f.Add("Loaded tools: a,,b")
	f.Fuzz(func(t *testing.T, s string) {
		names := ParseLoadedText(s)
		for _, n := range names {
			if !validName(n) {
				t.Fatalf("parsed invalid name %q", n)
			}
		}
		if len(names) > 0 {
			if got := ParseLoadedText(LoadedText(names)); !slices.Equal(got, names) {
				t.Fatalf("round trip %q → %q", names, got)
			}
		}
	})
}

func TestAnnouncementText(t *testing.T) {
	t.Parallel()
	a := Announcement{
		Added:         []Entry{{Name: "github__create_issue"}, {Name: "slack__", Count: 12}},
		Removed:       []Entry{{Name: "jira__create_ticket"}},
		Readded:       []Entry{{Name: "linear__", Count: 1}},
		ConnectingSet: true,
		Connecting:    []string{"notion", "sentry"},
	}
	want := "<deferred-tools>\n" + instructions + "\n" +
		"added:\ngithub__create_issue\nslack__* (12)\n" +
		"removed:\njira__create_ticket\n" +
		"re-added after a reconnect:\nlinear__* (1)\n" +
		"still connecting: notion, sentry\n</deferred-tools>"
	if got := a.Text(); got != want {
		t.Fatalf("Text:\n%s\nwant:\n%s", got, want)
	}
	back, ok := ParseAnnouncement(want)
	if !ok {
		t.Fatal("ParseAnnouncement failed")
	}
	if back.Text() != want {
		t.Fatalf("round trip:\n%s", back.Text())
	}
	if !IsAnnouncement("\n" + want) {
		t.Fatal("IsAnnouncement false")
	}
	none := Announcement{ConnectingSet: true}
	if got := none.Text(); !strings.Contains(got, "still connecting: none") {
		t.Fatalf("no connecting servers: %q", got)
	}
	if (Announcement{}).Text() != "" {
		t.Fatal("empty announcement has text")
	}
}

func TestParseAnnouncementRejects(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"",
		"hello",
		"<deferred-tools>\nadded:\na__b\n",
		"<deferred-tools>\nadded:\nbad name\n</deferred-tools>",
		"<deferred-tools>\nadded:\nx__* (0)\n</deferred-tools>",
		"<deferred-tools>\nadded:\nx__* (2 tools)\n</deferred-tools>",
		"<deferred-tools>\nadded:\nx__* (02)\n</deferred-tools>",
		"<deferred-tools>\nadded:\nx__* (many)\n</deferred-tools>",
		"<deferred-tools>\nadded:\nx__* (3\n</deferred-tools>",
		"<deferred-tools>\nstill connecting: a,,b\n</deferred-tools>",
		"<deferred-tools>\nstill connecting: a\nstill connecting: b\n</deferred-tools>",
		"<deferred-tools snapshot>\nadded:\na__b\n</deferred-tools>",
	} {
		if a, ok := ParseAnnouncement(s); ok {
			t.Errorf("ParseAnnouncement(%q) = %+v, want failure", s, a)
		}
	}
}

func FuzzParseAnnouncement(f *testing.F) {
	f.Add("<deferred-tools>\n" + instructions + "\nadded:\na__b\nc__* (3)\nremoved:\nd__e\nstill connecting: x, y\n</deferred-tools>")
	f.Add("<deferred-tools snapshot>\navailable:\nz__* (1)\n</deferred-tools>")
	f.Add("<deferred-tools>\nre-added after a reconnect:\nq__r\nstill connecting: none\n</deferred-tools>")
	f.Fuzz(func(t *testing.T, s string) {
		a, ok := ParseAnnouncement(s)
		if !ok {
			return
		}
		text := a.Text()
		if text == "" {
			return
		}
		b, ok := ParseAnnouncement(text)
		if !ok {
			t.Fatalf("cannot reparse %q (from %q)", text, s)
		}
		if b.Text() != text {
			t.Fatalf("not stable:\n%q\n%q", text, b.Text())
		}
		var st State
		st.Apply(a) // must not panic
	})
}

// covered lists the tools a state has told the model of, expanding groups
// with cur.
func covered(s *State, cur Deferred) []string {
	var out []string
	for _, srv := range cur.Servers {
		if _, ok := s.groups[srv.Prefix]; ok {
			out = append(out, srv.Names...)
			continue
		}
		for _, n := range srv.Names {
			if s.names[n] {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out
}

func allNames(cur Deferred) []string {
	var out []string
	for _, s := range cur.Servers {
		out = append(out, s.Names...)
	}
	slices.Sort(out)
	return out
}

func server(prefix string, n int) ServerTools {
	s := ServerTools{Prefix: prefix}
	for i := range n {
		s.Names = append(s.Names, fmt.Sprintf("%st%02d", prefix, i))
	}
	return s
}

func TestDeltaSequence(t *testing.T) {
	t.Parallel()
	gh, sl, big := server("github__", 3), server("slack__", 2), server("hosting__", 400)
	steps := []struct {
		name string
		cur  Deferred
		want string // the announcement's lines after the instruction line
	}{
		{
			name: "first turn: big server grouped",
			cur:  Deferred{Servers: []ServerTools{gh, big}, Connecting: []string{"slack"}},
			want: "added:\ngithub__t00\ngithub__t01\ngithub__t02\nhosting__* (400)\nstill connecting: slack",
		},
		{name: "no change", cur: Deferred{Servers: []ServerTools{gh, big}, Connecting: []string{"slack"}}},
		{
			name: "slack connects",
			cur:  Deferred{Servers: []ServerTools{gh, big, sl}},
			want: "added:\nslack__t00\nslack__t01\nstill connecting: none",
		},
		{
			name: "one tool removed, big server shrinks",
			cur:  Deferred{Servers: []ServerTools{{Prefix: "github__", Names: gh.Names[:2]}, server("hosting__", 399), sl}},
			want: "added:\nhosting__* (399)\nremoved:\ngithub__t02",
		},
		{
			name: "slack and hosting disconnect",
			cur:  Deferred{Servers: []ServerTools{{Prefix: "github__", Names: gh.Names[:2]}}},
			want: "removed:\nhosting__* (399)\nslack__t00\nslack__t01",
		},
		{
			name: "reconnect: everything back",
			cur:  Deferred{Servers: []ServerTools{gh, big, sl}},
			want: "re-added after a reconnect:\ngithub__t02\nhosting__* (400)\nslack__t00\nslack__t01",
		},
		{name: "steady", cur: Deferred{Servers: []ServerTools{gh, big, sl}}},
	}
	var st State
	for _, step := range steps {
		a := st.Delta(step.cur, 2000)
		got := ""
		if !a.Empty() {
			lines := strings.Split(a.Text(), "\n")
			got = strings.Join(lines[2:len(lines)-1], "\n")
		}
		if got != step.want {
			t.Fatalf("%s:\n%s\nwant:\n%s", step.name, got, step.want)
		}
		// What the conversation holds is the text; read it back.
		if !a.Empty() {
			back, ok := ParseAnnouncement(a.Text())
			if !ok {
				t.Fatalf("%s: cannot parse our own block", step.name)
			}
			st.Apply(back)
		}
		if c, want := covered(&st, step.cur), allNames(step.cur); !slices.Equal(c, want) {
			t.Fatalf("%s: model told of %d tools, %d deferred", step.name, len(c), len(want))
		}
		if again := st.Delta(step.cur, 2000); !again.Empty() {
			t.Fatalf("%s: second delta not empty: %s", step.name, again.Text())
		}
	}
}

func TestSnapshotAndDeltaSameInformation(t *testing.T) {
	t.Parallel()
	cur := Deferred{Servers: []ServerTools{server("a__", 5), server("b__", 300), server("c__", 40)}, Connecting: []string{"d"}}
	snap := SnapshotOf(cur, 1000)
	var fromSnap State
	fromSnap.Apply(snap)
	var fromDelta State
	fromDelta.Apply(fromDelta.Delta(Deferred{Servers: cur.Servers[:1]}, 1000))
	fromDelta.Apply(fromDelta.Delta(cur, 1000))
	if a, b := covered(&fromSnap, cur), covered(&fromDelta, cur); !slices.Equal(a, b) || !slices.Equal(a, allNames(cur)) {
		t.Fatalf("snapshot covers %d, delta %d, deferred %d", len(a), len(b), len(allNames(cur)))
	}
	if !slices.Equal(fromSnap.connecting, fromDelta.connecting) {
		t.Fatalf("connecting %q vs %q", fromSnap.connecting, fromDelta.connecting)
	}
	if !strings.HasPrefix(snap.Text(), "<deferred-tools snapshot>\n") || !strings.Contains(snap.Text(), "available:\na__t00\n") {
		t.Fatalf("snapshot text:\n%s", snap.Text())
	}
	if !strings.Contains(snap.Text(), "b__* (300)") {
		t.Fatalf("the largest server is not grouped:\n%s", snap.Text())
	}
	if got := len(snap.Text()); got > 1000+400 {
		t.Fatalf("snapshot of %d bytes exceeds the budget by far", got)
	}
}

// FuzzDelta applies deltas over random catalog changes and checks that the
// model is always told exactly the deferred tools, and that a delta applied
// leaves nothing more to say.
func FuzzDelta(f *testing.F) {
	f.Add([]byte{3, 1, 0, 7, 2, 200, 5}, uint16(300))
	f.Add([]byte{0, 0, 0}, uint16(1))
	f.Add([]byte{255, 17, 3, 3, 3, 90}, uint16(5000))
	f.Fuzz(func(t *testing.T, steps []byte, budget uint16) {
		var st State
		for i := 0; i+1 < len(steps) && i < 40; i += 2 {
			var cur Deferred
			mask, size := steps[i], int(steps[i+1])
			for s := range 6 {
				switch {
				case mask&(1<<s) == 0:
				case mask&(1<<6) != 0 && s%2 == 0:
					cur.Connecting = append(cur.Connecting, fmt.Sprintf("s%d", s))
				default:
					cur.Servers = append(cur.Servers, server(fmt.Sprintf("s%d__", s), (size*(s+1))%37))
				}
			}
			a := st.Delta(cur, int(budget))
			if !a.Empty() {
				back, ok := ParseAnnouncement(a.Text())
				if !ok {
					t.Fatalf("cannot parse %q", a.Text())
				}
				st.Apply(back)
			}
			if c, want := covered(&st, cur), allNames(cur); !slices.Equal(c, want) {
				t.Fatalf("step %d: told %q, deferred %q", i/2, c, want)
			}
			if again := st.Delta(cur, int(budget)); !again.Empty() {
				t.Fatalf("step %d: second delta %q", i/2, again.Text())
			}
		}
	})
}

func TestSearchToolDescription(t *testing.T) {
	t.Parallel()
	cur := Deferred{Servers: []ServerTools{server("a__", 5), server("b__", 300), server("c__", 40), server("d__", 1)}}
	got := SearchToolDescription(cur, 2)
	if !strings.Contains(got, "Servers: b__* (300), c__* (40), and 2 more servers with 6 tools.") {
		t.Fatalf("description: %s", got)
	}
	bigger := Deferred{Servers: append(slices.Clone(cur.Servers), server("e__", 2000))}
	if a, b := len(SearchToolDescription(cur, 2)), len(SearchToolDescription(bigger, 2)); b-a > 10 {
		t.Fatalf("description grows with the number of tools: %d → %d bytes", a, b)
	}
}

func TestParseStrategy(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Strategy{"": Delta, "delta": Delta, "Snapshot": Snapshot} {
		got, err := ParseStrategy(in)
		if err != nil || got != want || (in != "" && !strings.EqualFold(got.String(), in)) {
			t.Errorf("ParseStrategy(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseStrategy("sometimes"); err == nil {
		t.Error("ParseStrategy(sometimes) succeeded")
	}
}
