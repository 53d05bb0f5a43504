package search

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// siblingServers is a tracker whose tools differ only in their verb, beside
// a wiki that shares its nouns, and a maths server with numbers in names.
func siblingServers(t testing.TB) []*catalog.Server {
	return []*catalog.Server{
		fixtureServer(t, "tracker",
			fixtureTool{name: "create_ticket", desc: "Create a ticket in a project."},
			fixtureTool{name: "get_ticket", desc: "Get one ticket of a project by its key."},
			fixtureTool{name: "list_tickets", desc: "List the tickets of a project."},
			fixtureTool{name: "update_ticket", desc: "Update the fields of a ticket."},
			fixtureTool{name: "delete_ticket", desc: "Delete a ticket from a project."},
			fixtureTool{name: "search_tickets", desc: "Search the tickets of a project."},
		),
		fixtureServer(t, "wiki",
			fixtureTool{name: "create_page", desc: "Create a wiki page."},
			fixtureTool{name: "get_page", desc: "Get a wiki page by its title."},
			fixtureTool{name: "delete_page", desc: "Delete a wiki page."},
		),
		fixtureServer(t, "maths",
			fixtureTool{name: "count_divisible_by_5_with_zero", desc: "Count the integers of a list divisible by five, zero included."},
			fixtureTool{name: "walk", desc: "Walk a given number of steps along a path."},
			fixtureTool{name: "add_numbers", desc: "Add two numbers."},
		),
	}
}

func siblingIndex(t testing.TB) *Index {
	t.Helper()
	snap, err := catalog.NewSnapshot(siblingServers(t)...)
	if err != nil {
		t.Fatal(err)
	}
	return Build(snap)
}

// TestActionClasses checks that among siblings that differ by their verb,
// the one whose verb means the action the query asks for comes first,
// whatever everyday verb the query uses for it.
func TestActionClasses(t *testing.T) {
	t.Parallel()
	ix := siblingIndex(t)
	tests := []struct{ query, want string }{
		{"open a ticket", "tracker/create_ticket"},
		{"leave a ticket for the team", "tracker/create_ticket"},
		{"post a ticket", "tracker/create_ticket"},
		{"grab ticket ABC-12", "tracker/get_ticket"},
		{"pull up ticket ABC-12", "tracker/get_ticket"},
		{"edit a ticket", "tracker/update_ticket"},
		{"tweak the ticket", "tracker/update_ticket"},
		{"trash that ticket", "tracker/delete_ticket"},
		{"erase a wiki page", "wiki/delete_page"},
		{"hunt for tickets", "tracker/search_tickets"},
		{"browse tickets", "tracker/list_tickets"},
	}
	w := DefaultWeights
	w.Action = 0
	plain := BuildWith(mustSnapshot(t, siblingServers(t)), w)
	top := func(ix *Index, q string) string {
		res, err := ix.Search(context.Background(), Request{Query: q})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) == 0 {
			return ""
		}
		return res.Hits[0].Tool.ID()
	}
	plainWins := 0
	for _, tc := range tests {
		if got := top(ix, tc.query); got != tc.want {
			t.Errorf("%q: %s first, want %s", tc.query, got, tc.want)
		}
		if top(plain, tc.query) == tc.want {
			plainWins++
		}
	}
	// Synonyms alone tell some siblings apart; the classes must add.
	if plainWins == len(tests) {
		t.Errorf("without action classes every query is answered as well: the test shows nothing about them")
	}
	t.Logf("without action classes %d of %d queries put the right sibling first", plainWins, len(tests))
}

// TestActionGroupsOnlyForWords checks that only a query's own words add
// action classes: not the parts of an abbreviation's expansion (the pull
// of "PR") or of an identifier.
func TestActionGroupsOnlyForWords(t *testing.T) {
	t.Parallel()
	ix := siblingIndex(t)
	tests := []struct {
		query string
		want  string // an action class term the query must have, or ""
		not   string // one it must not have, or ""
	}{
		{"grab the ticket", actionPrefix + "get", ""},
		{"review my PR", "", actionPrefix + "get"},
		{"pull_ticket_data", "", actionPrefix + "get"},
		{"leave a ticket", actionPrefix + "create", ""},
	}
	for _, tc := range tests {
		terms := ix.QueryTerms(tc.query)
		if tc.want != "" && !slices.Contains(terms, tc.want) {
			t.Errorf("%q: terms %v lack %s", tc.query, terms, tc.want)
		}
		if tc.not != "" && slices.Contains(terms, tc.not) {
			t.Errorf("%q: terms %v have %s", tc.query, terms, tc.not)
		}
	}
}

// TestWeakNameParts checks that a number or a single letter in a tool's
// name does not make the tool win a query that merely has that number.
func TestWeakNameParts(t *testing.T) {
	t.Parallel()
	ix := siblingIndex(t)
	res, err := ix.Search(context.Background(), Request{Query: "take 5 steps forward"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) == 0 || res.Hits[0].Tool.ID() != "maths/walk" {
		t.Fatalf("hits %v, want maths/walk first", ids(res))
	}
	// The number is still found, as a description word.
	res, err = ix.Search(context.Background(), Request{Query: "divisible by 5"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) == 0 || res.Hits[0].Tool.ID() != "maths/count_divisible_by_5_with_zero" {
		t.Fatalf("hits %v, want the divisible tool first", ids(res))
	}
}

// hintedSnapshot is the fixture catalog with hints on two tools, one of
// whose hints names another tool exactly.
func hintedSnapshot(t testing.TB) *catalog.Snapshot {
	servers := fixtureServers(t)
	for _, s := range servers {
		for _, tl := range s.Tools {
			switch tl.ID() {
			case "kubernetes/scale_deployment":
				tl.Hints = []string{"add more replicas", "autoscale my web tier", "crank up the pod count"}
			case "slack/post_message":
				tl.Hints = []string{"read_file from the channel", "select:filesystem/read_file"}
			}
		}
	}
	snap, err := catalog.NewSnapshot(servers...)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// TestHintsField checks that a tool's hints find it, and that hints never
// make a tool outrank an exact name or a select:.
func TestHintsField(t *testing.T) {
	t.Parallel()
	ix := Build(hintedSnapshot(t))
	ctx := context.Background()
	res, err := ix.Search(ctx, Request{Query: "crank up the pod count", Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) == 0 || res.Hits[0].Tool.ID() != "kubernetes/scale_deployment" {
		t.Fatalf("hits %v, want kubernetes/scale_deployment first", ids(res))
	}
	if !strings.Contains(res.Hits[0].Why, "hints") {
		t.Errorf("why %q does not name the hints field", res.Hits[0].Why)
	}
	for _, q := range []string{"read_file", "select:read_file", "filesystem/read_file"} {
		res, err := ix.Search(ctx, Request{Query: q})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) == 0 || res.Hits[0].Tool.ID() != "filesystem/read_file" {
			t.Errorf("%q: hits %v, want filesystem/read_file first", q, ids(res))
		}
	}
	// Without its hints the tool is not found by them.
	plain := Build(mustSnapshot(t, fixtureServers(t)))
	res, err = plain.Search(ctx, Request{Query: "crank up the pod count"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) > 0 && res.Hits[0].Tool.ID() == "kubernetes/scale_deployment" {
		t.Fatal("the tool wins without its hints too: the test shows nothing about them")
	}
}

func mustSnapshot(t testing.TB, servers []*catalog.Server) *catalog.Snapshot {
	t.Helper()
	snap, err := catalog.NewSnapshot(servers...)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// TestServerNamesHelp checks that a query naming a server lists that
// server's tools, and that a word naming a server is never on its own a
// hit scoring 0.
func TestServerNamesHelp(t *testing.T) {
	t.Parallel()
	servers := []*catalog.Server{
		fixtureServer(t, "memory",
			fixtureTool{name: "create_entities", desc: "Create entities in the knowledge graph."},
			fixtureTool{name: "add_observations", desc: "Add observations to existing entities."},
			fixtureTool{name: "read_graph", desc: "Read the whole knowledge graph."},
		),
		fixtureServer(t, "filesystem",
			fixtureTool{name: "write_file", desc: "Write a file to disk."},
			fixtureTool{name: "read_file", desc: "Read a file from disk."},
		),
		fixtureServer(t, "everything",
			fixtureTool{name: "echo", desc: "Echo the input back."},
		),
	}
	ix := Build(mustSnapshot(t, servers))
	ctx := context.Background()
	res, err := ix.Search(ctx, Request{Query: "store a memory about a person", MaxResults: 5})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, h := range res.Hits {
		found = found || h.Tool.Server == "memory"
		if !(h.Score > 0) {
			t.Errorf("%s is a hit with score %v", h.Tool.ID(), h.Score)
		}
	}
	if !found {
		t.Fatalf("hits %v: no memory tool", ids(res))
	}
	res, err = ix.Search(ctx, Request{Query: "memory zzqx", MaxResults: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range res.Hits {
		if !(h.Score > 0) {
			t.Errorf("%q: %s is a hit with score %v", "memory zzqx", h.Tool.ID(), h.Score)
		}
	}
}

// TestImplicitMentionNeedsLift checks that a word concentrated in a
// server that holds most of the catalog does not boost that whole server,
// while a word found almost only in a small server's tools does.
func TestImplicitMentionNeedsLift(t *testing.T) {
	t.Parallel()
	var big []fixtureTool
	for i := range 60 {
		big = append(big, fixtureTool{name: fmt.Sprintf("api_%02d", i), desc: fmt.Sprintf("Endpoint %d of the weather data service.", i)})
	}
	servers := []*catalog.Server{
		fixtureServer(t, "bulk", big...),
		fixtureServer(t, "office",
			fixtureTool{name: "send_mail", desc: "Send an Outlook mail."},
			fixtureTool{name: "list_mail", desc: "List Outlook mail folders."},
			fixtureTool{name: "get_event", desc: "Get an Outlook calendar event."},
			fixtureTool{name: "weather_widget", desc: "Show the weather in the calendar."},
		),
		fixtureServer(t, "other",
			fixtureTool{name: "send_message", desc: "Send a chat message."},
			fixtureTool{name: "forecast", desc: "Weather forecast for a city."},
		),
	}
	ix := Build(mustSnapshot(t, servers))
	mention := func(q, id string) float64 {
		res, err := ix.Search(context.Background(), Request{Query: q, MaxResults: 50, Explain: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range res.Hits {
			if h.Tool.ID() == id && h.Breakdown != nil {
				return h.Breakdown.Mention
			}
		}
		t.Fatalf("%q: %s not found in %v", q, id, ids(res))
		return 0
	}
	if m := mention("weather endpoint", "bulk/api_07"); m != 0 {
		t.Errorf("a word of the big server's tools names it with strength %v, want 0", m)
	}
	if m := mention("outlook send", "office/send_mail"); !(m > 0) {
		t.Errorf("a word found only in the office tools does not name the server (strength %v)", m)
	}
}

// TestBreakdownIsTheScore checks that a hit's breakdown multiplies out to
// its score, and that its terms add up to its sum.
func TestBreakdownIsTheScore(t *testing.T) {
	t.Parallel()
	ix := Build(hintedSnapshot(t))
	for _, q := range []string{"open an issue in a repo", "post a message to slack", "crank up the pod count",
		"github pull request +branch", "read file text", "list tables schema postgres", "grab the logs of a pod"} {
		res, err := ix.Search(context.Background(), Request{Query: q, MaxResults: 10, Explain: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) == 0 {
			t.Fatalf("%q found nothing", q)
		}
		for _, h := range res.Hits {
			b := h.Breakdown
			if b == nil {
				t.Fatalf("%q: %s has no breakdown", q, h.Tool.ID())
			}
			if b.Score != h.Score {
				t.Errorf("%q: %s breakdown score %v, hit score %v", q, h.Tool.ID(), b.Score, h.Score)
			}
			product := b.Sum * math.Pow(b.Coverage, b.CoveragePower) * (1 + b.NameWeight*b.NameShare) * (1 + b.MentionWeight*b.Mention) *
				(1 + b.HintWeight*b.HintShare*b.HintShare) * (1 + b.HintLeadWeight*b.HintLead)
			if math.Abs(product-h.Score) > 1e-9*h.Score {
				t.Errorf("%q: %s factors multiply to %v, score %v", q, h.Tool.ID(), product, h.Score)
			}
			var sum float64
			for _, ts := range b.Terms {
				sum += ts.Score
				if want := ts.IDF * ts.Weight * (ts.K1 + 1) * ts.TF * (1 - ts.Named); math.Abs(want-ts.Score) > 1e-4*math.Max(1, ts.Score) {
					t.Errorf("%q: %s term %s scores %v, its parts give %v", q, h.Tool.ID(), ts.Word, ts.Score, want)
				}
			}
			if math.Abs(sum-b.Sum) > 1e-4*math.Max(1, b.Sum) {
				t.Errorf("%q: %s terms add to %v, sum %v", q, h.Tool.ID(), sum, b.Sum)
			}
			if s := b.String(); !strings.Contains(s, "coverage") || !strings.Contains(s, "idf") {
				t.Errorf("%q: breakdown text %q lacks its numbers", q, s)
			}
		}
	}
}
