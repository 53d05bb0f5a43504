package catalog

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// serverSummary is what a loader test checks about a server.
type serverSummary struct {
	Title, Package, Version string
	Keywords                []string
	Tools                   []toolSummary
}

type toolSummary struct {
	Name, Title, SearchHint string
	AlwaysLoad              bool
	Keywords                []string
}

func summarize(s *Snapshot) map[string]serverSummary {
	out := map[string]serverSummary{}
	for _, srv := range s.Servers() {
		ss := serverSummary{Title: srv.Title, Package: srv.Package, Version: srv.Version, Keywords: srv.Keywords}
		for _, t := range srv.Tools {
			ss.Tools = append(ss.Tools, toolSummary{Name: t.Name, Title: t.Title, SearchHint: t.SearchHint,
				AlwaysLoad: t.AlwaysLoad, Keywords: t.Keywords})
		}
		out[srv.Key] = ss
	}
	return out
}

func TestLoadFormats(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file    string
		servers []string // in snapshot order
		want    map[string]serverSummary
	}{
		{
			file:    "plain.json",
			servers: []string{"alpha", "mid", "zeta"},
			want: map[string]serverSummary{
				"alpha": {Title: "Alpha Server", Version: "1.2.3", Keywords: []string{"first", "letter"}, Tools: []toolSummary{
					{Name: "one", AlwaysLoad: true, Keywords: []string{"first", "letter"}},
					{Name: "two", Title: "Second", SearchHint: "deuce pair", AlwaysLoad: true, Keywords: []string{"first", "letter"}},
				}},
				"mid":  {Title: "Middle"},
				"zeta": {Tools: []toolSummary{{Name: "ping"}}},
			},
		},
		{
			file:    "collected.json",
			servers: []string{"beta", "delta", "gamma"},
			want: map[string]serverSummary{
				// server_name equal to the key or the package is not a title.
				"beta": {Package: "beta-pkg", Tools: []toolSummary{{Name: "b-one"}}},
				"delta": {Package: "delta-pkg", Version: "9.9.9", Tools: []toolSummary{
					{Name: "dOne", AlwaysLoad: true}, {Name: "dTwo", AlwaysLoad: true},
				}},
				"gamma": {Title: "Gamma Service", Package: "@example/gamma", Version: "0.1.0", Keywords: []string{"g", "third"}, Tools: []toolSummary{
					{Name: "g_list", Keywords: []string{"g", "third"}},
					{Name: "g_make", Title: "Make gamma", AlwaysLoad: true, Keywords: []string{"g", "third"}},
				}},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join("testdata", tc.file)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			// LoadFile and Load, the latter through a reader that returns
			// one byte at a time, give the same catalog.
			fromFile, err := LoadFile(path)
			if err != nil {
				t.Fatalf("LoadFile: %v", err)
			}
			s, err := Load(iotest.OneByteReader(bytes.NewReader(data)))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if fingerprintRaw(fromFile) != fingerprintRaw(s) {
				t.Error("LoadFile and Load disagree")
			}
			if s.Version() != 1 {
				t.Errorf("Version() = %d, want 1", s.Version())
			}
			var keys []string
			for _, srv := range s.Servers() {
				keys = append(keys, srv.Key)
			}
			if !slices.Equal(keys, tc.servers) {
				t.Errorf("servers = %v, want %v", keys, tc.servers)
			}
			got := summarize(s)
			for k, want := range tc.want {
				if g := got[k]; !summaryEqual(g, want) {
					t.Errorf("server %s:\n got %+v\nwant %+v", k, g, want)
				}
			}
			if err := checkConsistent(s); err != nil {
				t.Error(err)
			}
			// Every definition is kept byte for byte as it is in the file.
			for _, tool := range s.Tools() {
				if !bytes.Contains(data, tool.Raw) || !bytes.HasPrefix(tool.Raw, []byte("{")) || !bytes.HasSuffix(tool.Raw, []byte("}")) {
					t.Errorf("%s: Raw %q is not a verbatim slice of the file", tool.ID(), tool.Raw)
				}
				if tool.Server != tool.ID()[:strings.Index(tool.ID(), "/")] {
					t.Errorf("%s: Server %q", tool.ID(), tool.Server)
				}
			}
		})
	}
}

func fingerprintRaw(s *Snapshot) string {
	var b strings.Builder
	for _, srv := range s.Servers() {
		b.WriteString(srv.Key + "|" + srv.Title + "|" + srv.Package + "|" + srv.Version + "|" + strings.Join(srv.Keywords, ",") + "{")
		for _, t := range srv.Tools {
			b.Write(t.Raw)
		}
		b.WriteString("}")
	}
	return b.String()
}

func summaryEqual(a, b serverSummary) bool {
	if a.Title != b.Title || a.Package != b.Package || a.Version != b.Version ||
		!slices.Equal(a.Keywords, b.Keywords) || len(a.Tools) != len(b.Tools) {
		return false
	}
	for i := range a.Tools {
		x, y := a.Tools[i], b.Tools[i]
		if x.Name != y.Name || x.Title != y.Title || x.SearchHint != y.SearchHint ||
			x.AlwaysLoad != y.AlwaysLoad || !slices.Equal(x.Keywords, y.Keywords) {
			return false
		}
	}
	return true
}

func TestLoadVariants(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		input string
		tools []string
	}{
		{"empty object", `{}`, nil},
		{"surrounding white space", " \n\t{\"a\": []}\r\n ", nil},
		{"empty collected", `{"servers": []}`, nil},
		{"tools null", `{"a": {"tools": null}}`, nil},
		{"plain server called servers", `{"servers": {"tools": [{"name": "x"}]}}`, []string{"servers/x"}},
		{"collected with extra top-level fields", `{"servers": [{"key": "k", "tools": [{"name": "x"}]}], "note": 1}`, []string{"k/x"}},
		{"unknown server fields ignored", `{"a": {"tools": [{"name": "x"}], "whatever": {"nested": true}}}`, []string{"a/x"}},
		{"tool names may repeat across servers", `{"a": [{"name": "x"}], "b": [{"name": "x"}]}`, []string{"a/x", "b/x"}},
		{"unicode keys", `{"café": [{"name": "naïve"}]}`, []string{"café/naïve"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Load(strings.NewReader(tc.input))
			if err != nil {
				t.Fatalf("Load(%q): %v", tc.input, err)
			}
			if got := toolIDs(s); !slices.Equal(got, tc.tools) {
				t.Errorf("tools = %v, want %v", got, tc.tools)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		input string
		want  []string // substrings of the error
	}{
		{"empty input", ``, []string{"a catalog must be a JSON object"}},
		{"only white space", " \n ", []string{"a catalog must be a JSON object"}},
		{"array", `[{"name": "x"}]`, []string{"a catalog must be a JSON object"}},
		{"string", `"catalog"`, []string{"a catalog must be a JSON object"}},
		{"null", `null`, []string{"a catalog must be a JSON object"}},
		{"truncated", `{"a": [`, []string{"invalid JSON", "unexpected end of JSON input"}},
		{"syntax error", `{"a": [}`, []string{"invalid JSON", "invalid character '}'"}},
		{"trailing data", `{"a": []} {}`, []string{"invalid JSON", "after top-level value"}},
		{"server is a number", `{"a": 1}`, []string{`server "a"`, `want an object with "tools" or an array of tools`}},
		{"server is a string", `{"a": "tools"}`, []string{`server "a"`, "want an object"}},
		{"server is null", `{"a": null}`, []string{`server "a"`, "want an object"}},
		{"server is true", `{"a": true}`, []string{`server "a"`, "want an object"}},
		{"tools is an object", `{"a": {"tools": {"name": "x"}}}`, []string{`server "a"`}},
		{"keywords not strings", `{"a": {"tools": [], "keywords": [1]}}`, []string{`server "a"`}},
		{"array of non-objects", `{"a": [1]}`, []string{"tools[0]", `server "a"`}},
		{"duplicate tool names, plain", `{"a": [{"name": "x"}, {"name": "x"}]}`, []string{`server "a": duplicate tool name "x"`}},
		{"duplicate tool names, plain object", `{"a": {"tools": [{"name": "x"}, {"name": "y"}, {"name": "x"}]}}`, []string{`server "a": duplicate tool name "x"`}},
		{"duplicate tool names, collected", `{"servers": [{"key": "k", "tools": [{"name": "x"}, {"name": "x"}]}]}`, []string{"servers[0]", `server "k": duplicate tool name "x"`}},
		{"tool without a name, plain", `{"ok": [], "srv": [{"name": "x"}, {"description": "nameless"}]}`, []string{"tools[1]", `server "srv"`, `missing "name"`}},
		{"tool without a name, collected", `{"servers": [{"key": "k", "tools": [{}]}]}`, []string{"servers[0]", `server "k"`, `missing "name"`}},
		{"invalid plain key", `{"a/b": []}`, []string{`server key "a/b" contains "/"`}},
		{"plain key with white space", `{"a b": []}`, []string{"white space"}},
		{"plain key empty", `{"": []}`, []string{"server key is empty"}},
		{"collected key missing", `{"servers": [{"tools": []}]}`, []string{"servers[0]", "server key is empty"}},
		{"collected key with separator", `{"servers": [{"key": "ok"}, {"key": "x__y"}]}`, []string{"servers[1]", `contains "__"`}},
		{"collected element not an object", `{"servers": [42]}`, []string{`"servers"`}},
		{"duplicate server, plain", `{"a": [{"name": "x"}], "a": [{"name": "y"}]}`, []string{`server "a" appears twice`}},
		{"duplicate server, collected", `{"servers": [{"key": "a", "tools": []}, {"key": "a", "tools": []}]}`, []string{"servers[1]", `duplicate server key "a"`}},
		{"tool keywords for an unknown tool", `{"a": {"tools": [{"name": "x"}], "toolKeywords": {"y": ["w"]}}}`, []string{`server "a"`, `names "y"`}},
		{"key ending in underscore", `{"a_": [{"name": "b"}]}`, []string{`server key "a_" ends with "_"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Load(strings.NewReader(tc.input))
			if err == nil {
				t.Fatalf("Load(%q) gave %d tools, want an error", tc.input, len(s.Tools()))
			}
			if s != nil {
				t.Errorf("Load returned a snapshot along with %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			// Parse agrees with Load.
			if _, perr := Parse([]byte(tc.input)); perr == nil || perr.Error() != err.Error() {
				t.Errorf("Parse error %v, Load error %v", perr, err)
			}
		})
	}
}

func TestLoadFileErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		want []string
	}{
		{"array.json", []string{"a catalog must be a JSON object"}},
		{"duplicate_tool.json", []string{`server "srv": duplicate tool name "x"`}},
		{"scalar_server.json", []string{`server "other"`, "want an object"}},
		{"truncated.json", []string{"invalid JSON", "unexpected end of JSON input"}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join("testdata", "bad", tc.file)
			_, err := LoadFile(path)
			if err == nil {
				t.Fatal("LoadFile succeeded, want an error")
			}
			// The error names the file.
			for _, w := range append([]string{"catalog " + path + ": "}, tc.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}

	t.Run("missing file", func(t *testing.T) {
		t.Parallel()
		_, err := LoadFile(filepath.Join(t.TempDir(), "nope.json"))
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("error %v, want one wrapping fs.ErrNotExist", err)
		}
	})
}

func TestLoadReadError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	_, err := Load(iotest.ErrReader(boom))
	if !errors.Is(err, boom) {
		t.Errorf("Load error %v, want the reader's", err)
	}
}

func TestToolKeywords(t *testing.T) {
	t.Parallel()
	s, err := Load(strings.NewReader(`{"a": {"keywords": ["srv"], "toolKeywords": {"x": ["bug", "defect"]},
		"tools": [{"name": "x"}, {"name": "y"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	x, _ := s.Tool("a/x")
	y, _ := s.Tool("a/y")
	if got := strings.Join(x.Keywords, ","); got != "srv,bug,defect" {
		t.Errorf("a/x keywords = %q", got)
	}
	if got := strings.Join(y.Keywords, ","); got != "srv" {
		t.Errorf("a/y keywords = %q", got)
	}
}
