package usage_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/core/usage"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func newStore(t *testing.T, opt usage.Options) *usage.Store {
	t.Helper()
	s, err := usage.New(opt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSharesBySimilarity(t *testing.T) {
	t.Parallel()
	idf := map[string]float64{"creat": 1, "issu": 3, "repo": 2, "get": 0, "file": 2.5}
	weigh := func(s string) float64 { return idf[s] }
	cases := []struct {
		name     string
		recorded [][]string // each recorded once for tool a/x
		query    []string
		want     float64 // share of a/x; 0: absent
	}{
		{"same terms, once", [][]string{{"creat", "issu"}}, []string{"issu", "creat"}, 0.5},
		{"same terms, three times", [][]string{{"creat", "issu"}, {"creat", "issu"}, {"issu", "creat"}}, []string{"creat", "issu"}, 0.75},
		// idf(issu) / idf(creat, issu, repo) = 3/6: evidence 0.5.
		{"half alike by idf", [][]string{{"creat", "issu"}}, []string{"issu", "repo"}, 0.5 / 1.5},
		{"no common term", [][]string{{"creat", "issu"}}, []string{"file", "repo"}, 0},
		// Sharing a term of idf 0 makes queries no more alike.
		{"common word of no weight", [][]string{{"get", "file"}}, []string{"get", "repo"}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t, usage.Options{})
			for _, terms := range c.recorded {
				if err := s.Record(terms, "a/x", t0); err != nil {
					t.Fatal(err)
				}
			}
			got := s.Shares(c.query, weigh, t0)
			if math.Abs(got["a/x"]-c.want) > 1e-9 {
				t.Fatalf("share %v, want %v (all: %v)", got["a/x"], c.want, got)
			}
			for tool, sh := range got {
				if !(sh >= 0 && sh < 1) {
					t.Fatalf("%s: share %v out of [0, 1)", tool, sh)
				}
			}
		})
	}
}

func TestDecayAndHalfLife(t *testing.T) {
	t.Parallel()
	for _, h := range []time.Duration{time.Hour, 24 * time.Hour} {
		s := newStore(t, usage.Options{HalfLife: h})
		if err := s.Record([]string{"creat", "issu"}, "a/x", t0); err != nil {
			t.Fatal(err)
		}
		q := []string{"creat", "issu"}
		// Strength 1 then 1/2 after one half-life: shares 1/2, then 1/3.
		for _, c := range []struct {
			at   time.Time
			want float64
		}{{t0, 0.5}, {t0.Add(h), 1.0 / 3}, {t0.Add(-time.Hour), 0.5}} {
			if got := s.Shares(q, nil, c.at)["a/x"]; math.Abs(got-c.want) > 1e-9 {
				t.Errorf("half-life %v at %v: share %v, want %v", h, c.at.Sub(t0), got, c.want)
			}
		}
		// A second call a half-life later adds 1 to the faded 1/2.
		if err := s.Record(q, "a/x", t0.Add(h)); err != nil {
			t.Fatal(err)
		}
		if e := s.Entries(t0.Add(h)); len(e) != 1 || math.Abs(e[0].Strength-1.5) > 1e-9 {
			t.Errorf("half-life %v: entries %+v, want one of strength 1.5", h, e)
		}
	}
}

func TestEvictsWeakest(t *testing.T) {
	t.Parallel()
	s := newStore(t, usage.Options{MaxEntries: 3, HalfLife: time.Hour})
	rec := func(tool string, at time.Time, n int) {
		for range n {
			if err := s.Record([]string{"send", "messag"}, tool, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	rec("a/strong", t0, 4)
	rec("a/weak", t0, 1)
	rec("a/old", t0.Add(-5*time.Hour), 8) // 8 / 32 = 0.25 by t0
	rec("a/new", t0, 1)
	if s.Len() != 3 {
		t.Fatalf("%d entries, want 3", s.Len())
	}
	var tools []string
	for _, e := range s.Entries(t0) {
		tools = append(tools, e.Tool)
	}
	if got := strings.Join(tools, " "); got != "a/strong a/weak a/new" && got != "a/strong a/new a/weak" {
		t.Fatalf("kept %s, want the old, weakest entry evicted", got)
	}
}

func TestRecordRefuses(t *testing.T) {
	t.Parallel()
	s := newStore(t, usage.Options{})
	many := make([]string, usage.MaxTerms+1)
	for i := range many {
		many[i] = strings.Repeat("t", i+1)
	}
	cases := []struct {
		name  string
		terms []string
		tool  string
		want  string
	}{
		{"empty tool", []string{"a"}, "", "tool"},
		{"long tool", []string{"a"}, strings.Repeat("x", usage.MaxToolLen+1), "bytes"},
		{"no terms", nil, "a/x", "no terms"},
		{"empty term", []string{""}, "a/x", "empty"},
		{"control", []string{"a\nb"}, "a/x", "control"},
		{"not utf-8", []string{"\xff"}, "a/x", "UTF-8"},
		{"too many", many, "a/x", "more than"},
	}
	for _, c := range cases {
		if err := s.Record(c.terms, c.tool, t0); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
	if s.Len() != 0 {
		t.Fatalf("refused records left %d entries", s.Len())
	}
}

func TestOptionsRange(t *testing.T) {
	t.Parallel()
	for _, o := range []usage.Options{{HalfLife: time.Second}, {HalfLife: 400 * 24 * time.Hour}, {MaxEntries: -1}, {MaxEntries: usage.MaxMaxEntries + 1}} {
		if _, err := usage.New(o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "state", usage.FileName)
	s := newStore(t, usage.Options{HalfLife: time.Hour})
	now := time.Now()
	for i, terms := range [][]string{{"creat", "issu"}, {"send", "messag", "slack"}, {"creat", "issu"}} {
		if err := s.Record(terms, []string{"gh/create_issue", "slack/post", "gh/create_issue"}[i], now); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Save(path); err != nil {
		t.Fatal(err)
	}
	if s.Changed() {
		t.Fatal("changed after save")
	}
	got, err := usage.Load(path, usage.Options{HalfLife: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	a, b := s.Entries(now), got.Entries(now)
	if len(a) != 2 || len(a) != len(b) {
		t.Fatalf("entries %v, loaded %v", a, b)
	}
	for i := range a {
		if a[i].Tool != b[i].Tool || math.Abs(a[i].Strength-b[i].Strength) > 1e-3 || strings.Join(a[i].Terms, " ") != strings.Join(b[i].Terms, " ") {
			t.Fatalf("entry %d: %+v, loaded %+v", i, a[i], b[i])
		}
	}
	// No temporary file is left beside it.
	files, _ := os.ReadDir(filepath.Dir(path))
	if len(files) != 1 {
		t.Fatalf("%d files in the state directory, want 1", len(files))
	}
	// A missing file is an empty store.
	empty, err := usage.Load(filepath.Join(dir, "none.json"), usage.Options{})
	if err != nil || empty.Len() != 0 {
		t.Fatalf("missing file: %v, %d entries", err, empty.Len())
	}
}

func TestLoadKeepsStrongest(t *testing.T) {
	t.Parallel()
	s := newStore(t, usage.Options{HalfLife: time.Hour})
	now := time.Now()
	for i := range 10 {
		for range i + 1 {
			if err := s.Record([]string{"w"}, "s/t"+string(rune('a'+i)), now); err != nil {
				t.Fatal(err)
			}
		}
	}
	data, err := s.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := usage.Decode(data, usage.Options{HalfLife: time.Hour, MaxEntries: 3}, now)
	if err != nil {
		t.Fatal(err)
	}
	var tools []string
	for _, e := range got.Entries(now) {
		tools = append(tools, e.Tool)
	}
	if strings.Join(tools, " ") != "s/tj s/ti s/th" {
		t.Fatalf("kept %v, want the three strongest", tools)
	}
}

func TestDecodeRefuses(t *testing.T) {
	t.Parallel()
	now := time.Unix(1764600000, 0)
	entry := func(e string) string {
		return `{"format":"toolsearch-usage","version":1,"entries":[` + e + `]}`
	}
	cases := []struct{ name, data, want string }{
		{"empty", ``, "not a usage file"},
		{"array", `[]`, "not a usage file"},
		{"other format", `{"format":"x","version":1,"entries":[]}`, "format"},
		{"newer", `{"format":"toolsearch-usage","version":2,"entries":[]}`, "newer"},
		{"version 0", `{"format":"toolsearch-usage","version":0,"entries":[]}`, "version 0"},
		{"unknown key", `{"format":"toolsearch-usage","version":1,"entries":[],"x":1}`, "unknown field"},
		{"trailing", entry(``) + `{}`, "after the object"},
		{"no terms", entry(`{"terms":[],"tool":"a/b","weight":1,"at":1}`), "0 terms"},
		{"unsorted", entry(`{"terms":["b","a"],"tool":"a/b","weight":1,"at":1}`), "sorted"},
		{"repeated term", entry(`{"terms":["a","a"],"tool":"a/b","weight":1,"at":1}`), "sorted"},
		{"empty tool", entry(`{"terms":["a"],"tool":"","weight":1,"at":1}`), "tool"},
		{"control in term", entry(`{"terms":["a\u0000"],"tool":"a/b","weight":1,"at":1}`), "control"},
		{"zero weight", entry(`{"terms":["a"],"tool":"a/b","weight":0,"at":1}`), "weight"},
		{"huge weight", entry(`{"terms":["a"],"tool":"a/b","weight":1e300,"at":1}`), "weight"},
		{"negative time", entry(`{"terms":["a"],"tool":"a/b","weight":1,"at":-5}`), "time"},
		{"future", entry(`{"terms":["a"],"tool":"a/b","weight":1,"at":1864600000}`), "time"},
		{"duplicate", entry(`{"terms":["a"],"tool":"a/b","weight":1,"at":1},{"terms":["a"],"tool":"a/b","weight":2,"at":1}`), "repeats entry 0"},
		{"wrong type", entry(`{"terms":"a","tool":"a/b","weight":1,"at":1}`), "not a usage file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, err := usage.Decode([]byte(c.data), usage.Options{}, now)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v (store %v), want an error with %q", err, s, c.want)
			}
		})
	}
}

func TestLoadRefusesNonFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := usage.Load(dir, usage.Options{}); err == nil || !strings.Contains(err.Error(), "learned usage") {
		t.Fatalf("loading a directory: %v", err)
	}
	bad := filepath.Join(dir, "usage.json")
	if err := os.WriteFile(bad, []byte(`{"format":"toolsearch-usage","version":1,"entries":[{]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := usage.Load(bad, usage.Options{}); err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("loading a corrupt file: %v, want an error naming it", err)
	}
}

// FuzzDecode checks that any file is read or refused with an error, never
// a panic, and that what is read keeps every bound and saves back to a
// file that reads the same.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"format":"toolsearch-usage","version":1,"entries":[{"terms":["a","b"],"tool":"s/t","weight":2,"at":1764600000}]}`))
	f.Add([]byte(`{"format":"toolsearch-usage","version":1,"halfLife":"1h","entries":[]}`))
	f.Add([]byte(`{"format":"toolsearch-usage","version":1,"entries":[{"terms":["a"],"tool":"s/t","weight":1e6,"at":0},{"terms":["a"],"tool":"s/u","weight":0.5,"at":1.5}]}`))
	f.Add([]byte(`{"format":"toolsearch-usage","version":1,"entries":[{"terms":["\u00e9"],"tool":"s/t","weight":1,"at":1}]}`))
	f.Add([]byte(`not json`))
	now := time.Unix(1764600000, 0)
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := usage.Decode(data, usage.Options{MaxEntries: 4}, now)
		if err != nil {
			if s != nil {
				t.Fatal("a store with an error")
			}
			return
		}
		if s.Len() > 4 {
			t.Fatalf("%d entries past the cap", s.Len())
		}
		for _, e := range s.Entries(now) {
			if !(e.Strength >= usage.MinStrength && e.Strength <= usage.MaxStrength) {
				t.Fatalf("entry %+v: strength out of range", e)
			}
			sh := s.Shares(e.Terms, nil, now)[e.Tool]
			if !(sh > 0 && sh < 1) {
				t.Fatalf("entry %+v: share %v", e, sh)
			}
		}
		out, err := s.Encode()
		if err != nil {
			t.Fatal(err)
		}
		back, err := usage.Decode(out, usage.Options{MaxEntries: 4}, now)
		if err != nil {
			t.Fatalf("saved file refused: %v\n%s", err, out)
		}
		if back.Len() != s.Len() {
			t.Fatalf("%d entries read back, want %d", back.Len(), s.Len())
		}
	})
}
