package lint

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/search"
)

func server(t *testing.T, key string, tools ...string) *catalog.Server {
	t.Helper()
	raws := make([]json.RawMessage, len(tools))
	for i, s := range tools {
		raws[i] = json.RawMessage(s)
	}
	srv, err := catalog.NewServer(key, raws, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

func TestCheck(t *testing.T) {
	t.Parallel()
	snap, err := catalog.NewSnapshot(
		server(t, "notes",
			`{"name":"create_note","description":"Write a new note with a title and a body into the notebook.","inputSchema":{"type":"object","properties":{"title":{"type":"string","description":"Title"},"body":{"type":"string"}}}}`,
			`{"name":"nothing","inputSchema":{"type":"object"}}`,
			`{"name":"tiny","description":"Does it.","inputSchema":{"type":"object"}}`,
			`{"name":"copy_a","description":"Archive every note older than a year into cold storage.","inputSchema":{"type":"object"}}`,
			`{"name":"copy_b","description":"Archive every note older than a year into cold storage.","inputSchema":{"type":"object"}}`,
			`{"name":"weird","description":"Takes a list of numbers and adds them up for the caller.","inputSchema":{"type":"array"}}`,
		),
		server(t, "other",
			`{"name":"create_note","description":"Pin a sticky reminder on the shared wall for everyone.","inputSchema":{"type":"object"}}`,
		),
	)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Check(context.Background(), snap, search.Build(snap), Options{Servers: []string{"notes"}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Tools != 6 {
		t.Errorf("linted %d tools, want the 6 of server notes", rep.Tools)
	}
	want := map[string]Severity{
		"notes/nothing description":    Error,
		"notes/tiny description":       Warning,
		"notes/copy_b duplicate":       Warning,
		"notes/weird schema":           Error,
		"notes/create_note parameters": Info,
		"notes/create_note name":       Info,
	}
	got := map[string]Severity{}
	for _, f := range rep.Findings {
		got[f.Tool+" "+f.Check] = f.Severity
		if f.Message == "" {
			t.Errorf("finding %+v has no message", f)
		}
		if strings.HasPrefix(f.Tool, "other/") {
			t.Errorf("finding about a server not asked for: %+v", f)
		}
	}
	for k, sev := range want {
		if g, ok := got[k]; !ok || g != sev {
			t.Errorf("finding %q: got %v (present %v), want %v; all: %+v", k, g, ok, sev, rep.Findings)
		}
	}
	for i := 1; i < len(rep.Findings); i++ {
		if rep.Findings[i-1].Severity < rep.Findings[i].Severity {
			t.Errorf("findings not ordered by severity: %+v", rep.Findings)
		}
	}
	if rep.Findable < 3 {
		t.Errorf("findable = %d, want at least create_note, copy_a and weird", rep.Findable)
	}
	if _, err := Check(context.Background(), snap, search.Build(snap), Options{Servers: []string{"nope"}}); err == nil {
		t.Error("unknown server accepted")
	}
}
