package search_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/search"
)

// hintTools is a catalog of one server whose tools have the same
// description and the given hints, for comparing how hints score.
func hintTools(t *testing.T, hints map[string][]string) *catalog.Snapshot {
	t.Helper()
	var raws []json.RawMessage
	names := make([]string, 0, len(hints))
	for name := range hints {
		names = append(names, name)
	}
	// Fillers give the index words the hints do not use, so that idfs
	// are not all alike.
	for i := range 6 {
		names = append(names, fmt.Sprintf("filler_%c", 'a'+i))
	}
	for _, name := range names {
		raw, err := json.Marshal(map[string]any{"name": name, "description": "Does a thing with records.",
			"inputSchema": map[string]any{"type": "object"}})
		if err != nil {
			t.Fatal(err)
		}
		raws = append(raws, raw)
	}
	srv, err := catalog.NewServer("office", raws, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range srv.Tools {
		tl.Hints = hints[tl.Name]
	}
	snap, err := catalog.NewSnapshot(srv)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// explained returns, per tool name, the breakdown of its hit for q.
func explained(t *testing.T, ix *search.Index, q string) map[string]*search.Breakdown {
	t.Helper()
	res, err := ix.Search(context.Background(), search.Request{Query: q, MaxResults: 20, Mode: search.ModeKeyword, Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*search.Breakdown{}
	for _, h := range res.Hits {
		out[h.Tool.Name] = h.Breakdown
	}
	return out
}

// termTF is the saturated frequency of the breakdown's only term.
func termTF(t *testing.T, b *search.Breakdown) float64 {
	t.Helper()
	if b == nil || len(b.Terms) != 1 {
		t.Fatalf("breakdown %v, want one term", b)
	}
	return b.Terms[0].TF
}

// TestHintsWeighedOneByOne checks that each hint is normalised by its
// own length, and that HintRest says how much a term's other hints add.
func TestHintsWeighedOneByOne(t *testing.T) {
	t.Parallel()
	snap := hintTools(t, map[string][]string{
		// The same words in all, "rotate" in a short hint or a long one.
		"short_hint": {"rotate keys", "alpha beta gamma delta epsilon zeta"},
		"long_hint":  {"rotate keys alpha beta gamma delta epsilon zeta"},
		// "rotate" in two hints or in one, hints of the same lengths.
		"two_hints": {"rotate tokens", "rotate certs"},
		"one_hint":  {"rotate tokens", "renew certs"},
	})
	tests := []struct {
		rest         float64
		twoAboveOne  bool // whether a second hint with the word adds
		shortAboveLg bool
	}{
		{rest: 0, twoAboveOne: false, shortAboveLg: true},
		{rest: 0.5, twoAboveOne: true, shortAboveLg: true},
		{rest: 1, twoAboveOne: true, shortAboveLg: true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint("rest=", tc.rest), func(t *testing.T) {
			t.Parallel()
			w := search.DefaultWeights
			w.HintRest = tc.rest
			got := explained(t, search.BuildWith(snap, w), "rotate")
			short, long := termTF(t, got["short_hint"]), termTF(t, got["long_hint"])
			if (short > long) != tc.shortAboveLg {
				t.Errorf("tf in a short hint %v, in a long one %v", short, long)
			}
			two, one := termTF(t, got["two_hints"]), termTF(t, got["one_hint"])
			if (two > one) != tc.twoAboveOne || two < one {
				t.Errorf("tf in two hints %v, in one %v", two, one)
			}
		})
	}
}

// TestHintCoverage checks that a tool one of whose hints says the whole
// query outranks a tool with the same words spread over its hints, that
// the breakdown shows the share and the view weight, and that the factor
// is what the breakdown says it is, for a tool with written hints and for
// one scored by its own phrasings alone.
func TestHintCoverage(t *testing.T) {
	t.Parallel()
	snap := hintTools(t, map[string][]string{
		"together": {"archive stale invoices", "quietly tonight"},
		"apart":    {"archive quietly", "stale invoices tonight"},
		"unhinted": nil,
	})
	const q = "archive stale invoices records"
	got := explained(t, search.Build(snap), q)
	together, apart, unhinted := got["together"], got["apart"], got["unhinted"]
	if together == nil || apart == nil || unhinted == nil {
		t.Fatalf("breakdowns %v", got)
	}
	if together.Score <= apart.Score {
		t.Errorf("one hint saying the query scores %v, the same words over two hints %v", together.Score, apart.Score)
	}
	if !(together.HintShare > apart.HintShare && apart.HintShare > 0 && together.HintShare < 1) {
		t.Errorf("hint shares %v (one hint) and %v (two), want 0 < two < one < 1 (records is in no hint)", together.HintShare, apart.HintShare)
	}
	if together.HintWeight != search.DefaultWeights.HintCoverage || together.HintView != search.DefaultWeights.HintView {
		t.Errorf("hinted tool's weight %v, view %v", together.HintWeight, together.HintView)
	}
	if !strings.Contains(together.String(), "hint view (×0.50)") || strings.Contains(unhinted.String(), "hint view") {
		t.Errorf("only the hinted tool's breakdown should name its views:\n%s\n%s", together, unhinted)
	}
	// The tool without written hints is scored by its definition alone:
	// its description's first sentence has "records", a share of the
	// query of its own.
	if unhinted.HintView != 0 || !(unhinted.HintShare > 0 && unhinted.HintShare < apart.HintShare) {
		t.Errorf("unhinted tool: view %v, share %v (want 0, and a share below %v)", unhinted.HintView, unhinted.HintShare, apart.HintShare)
	}
	// Without the factor, the words alone decide, and each score is the
	// one above without its factor.
	w := search.DefaultWeights
	w.HintCoverage = 0
	off := explained(t, search.BuildWith(snap, w), q)
	if off["together"].HintWeight != 0 || off["together"].Sum != together.Sum {
		t.Errorf("with no hint coverage: weight %v, sum %v (%v with it)", off["together"].HintWeight, off["together"].Sum, together.Sum)
	}
	for name, b := range map[string]*search.Breakdown{"together": together, "unhinted": unhinted} {
		factor := 1 + b.HintWeight*b.HintShare*b.HintShare
		if want := b.Score / factor; math.Abs(off[name].Score-want) > 1e-9*want {
			t.Errorf("%s scores %v without hint coverage, want %v (%v over its factor %v)", name, off[name].Score, want, b.Score, factor)
		}
	}
}

// TestHintCoverageNeedsHints checks that an index without hints scores
// every tool exactly as it would with no hint coverage at all.
func TestHintCoverageNeedsHints(t *testing.T) {
	t.Parallel()
	snap := benchCatalog(t)
	w := search.DefaultWeights
	w.HintCoverage = 0
	with, without := search.Build(snap), search.BuildWith(snap, w)
	ctx := context.Background()
	for _, q := range scoreQueries {
		req := search.Request{Query: q, MaxResults: 10, Explain: true}
		a, errA := with.Search(ctx, req)
		b, errB := without.Search(ctx, req)
		if errA != nil || errB != nil {
			t.Fatalf("%q: %v / %v", q, errA, errB)
		}
		if len(a.Hits) != len(b.Hits) {
			t.Fatalf("%q: %d hits, %d without hint coverage", q, len(a.Hits), len(b.Hits))
		}
		for i := range a.Hits {
			if a.Hits[i].Tool != b.Hits[i].Tool || a.Hits[i].Score != b.Hits[i].Score || a.Hits[i].Breakdown.HintWeight != 0 {
				t.Errorf("%q hit %d: %s %v, %s %v without hint coverage", q, i, a.Hits[i].Tool.ID(), a.Hits[i].Score, b.Hits[i].Tool.ID(), b.Hits[i].Score)
			}
		}
	}
}

// TestHintsCostNothing checks the promise of the two views on a catalog
// where one server has written hints and another, with the same tool, has
// none: on a query both definitions answer alike, the tool without hints
// is not ranked below the one with them; on a query only the hints answer,
// the hints lift their tool above it; and a tool whose description only
// happens to share the query's words ranks lower once its hints say what
// it really does.
func TestHintsCostNothing(t *testing.T) {
	t.Parallel()
	const desc = "Archive the stale invoices of a customer account so they leave the open list."
	raw := func(name, desc string) json.RawMessage {
		b, err := json.Marshal(map[string]any{"name": name, "description": desc, "inputSchema": map[string]any{"type": "object"}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	server := func(key string, tools ...json.RawMessage) *catalog.Server {
		srv, err := catalog.NewServer(key, tools, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	hinted := server("ledger", raw("archive_invoices", desc), raw("send_reminder", "Email a payment reminder for an invoice that is overdue."),
		raw("export_report", "Export the account report; stale invoices and open ones are listed apart."))
	plain := server("books", raw("archive_invoices", desc), raw("void_invoice", "Cancel an invoice that was sent by mistake."))
	filler := server("crm", raw("list_contacts", "List the contacts of a customer."), raw("log_call", "Record a phone call with a customer."),
		raw("merge_accounts", "Merge two duplicate customer accounts into one."))
	for _, tl := range hinted.Tools {
		switch tl.Name {
		case "archive_invoices":
			tl.Hints = []string{"file away old bills", "clean up unpaid bills nobody will pay", "tidy the receivables list"}
		case "export_report":
			tl.Hints = []string{"download a spreadsheet of the accounts", "monthly finance summary as a file"}
		case "send_reminder":
			tl.Hints = []string{"nudge a customer who has not paid", "chase a late payment"}
		}
	}
	snap, err := catalog.NewSnapshot(hinted, plain, filler)
	if err != nil {
		t.Fatal(err)
	}
	ix := search.Build(snap)
	rank := func(q string) map[string]int {
		res, err := ix.Search(context.Background(), search.Request{Query: q, MaxResults: 10, Mode: search.ModeKeyword})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for i, h := range res.Hits {
			out[h.Tool.ID()] = i + 1
		}
		return out
	}
	// Both definitions say it; the hints do not.
	got := rank("archive stale invoices")
	if u, e := got["books/archive_invoices"], got["ledger/archive_invoices"]; u == 0 || (e != 0 && u > e) {
		t.Errorf("archive stale invoices: the tool without hints at %d, its hinted twin at %d (%v)", u, e, got)
	}
	// A description that only shares the words falls below both.
	if r := got["ledger/export_report"]; r != 0 && r < got["books/archive_invoices"] {
		t.Errorf("archive stale invoices: export_report at %d, above the tool without hints (%v)", r, got)
	}
	// Only the hints say it: they lift their tool.
	got = rank("file away old bills")
	if e, u := got["ledger/archive_invoices"], got["books/archive_invoices"]; e != 1 || (u != 0 && u < e) {
		t.Errorf("file away old bills: the hinted tool at %d, its twin at %d (%v)", e, u, got)
	}
}

// TestManyHints checks that a tool with more hints than hint coverage
// looks at is still indexed and found by every hint, without a panic.
func TestManyHints(t *testing.T) {
	t.Parallel()
	many := make([]string, 100)
	for i := range many {
		many[i] = fmt.Sprintf("word%d thing", i)
	}
	many[90] = "reconcile ledger"
	snap := hintTools(t, map[string][]string{"many": many, "few": {"reconcile accounts"}})
	got := explained(t, search.Build(snap), "reconcile ledger")
	b := got["many"]
	if b == nil {
		t.Fatalf("the tool with 100 hints is not found by its 91st: %v", got)
	}
	if b.HintShare >= 1 || len(b.Terms) != 2 {
		t.Errorf("hint share %v from a hint past the ones coverage looks at, terms %v", b.HintShare, b.Terms)
	}
}

// TestHintLead checks that a tool one of whose hints starts with the
// query's first term outranks a tool whose hint has the same words in
// another order, that a synonym leads at the synonym's weight, that the
// breakdown shows it, and that without the factor the two tie.
func TestHintLead(t *testing.T) {
	t.Parallel()
	snap := hintTools(t, map[string][]string{
		"leads":  {"archive stale invoices"},
		"trails": {"stale invoices archive"},
		"erases": {"delete stale invoices"},
	})
	tests := []struct {
		q       string
		first   string  // the tool whose hint starts as the query does
		lead    float64 // its L
		beneath string  // a tool with the same words in another order
	}{
		{q: "archive stale invoices", first: "leads", lead: 1, beneath: "trails"},
		{q: "stale invoices archive", first: "trails", lead: 1, beneath: "leads"},
		{q: "remove stale invoices", first: "erases", lead: search.DefaultWeights.Synonym, beneath: ""},
	}
	for _, tc := range tests {
		t.Run(tc.q, func(t *testing.T) {
			t.Parallel()
			got := explained(t, search.Build(snap), tc.q)
			first := got[tc.first]
			if first == nil {
				t.Fatalf("%s not found: %v", tc.first, got)
			}
			if first.HintLead != tc.lead || first.HintLeadWeight != search.DefaultWeights.HintLead {
				t.Errorf("%s: lead %v weight %v, want %v and %v", tc.first, first.HintLead, first.HintLeadWeight, tc.lead, search.DefaultWeights.HintLead)
			}
			if !strings.Contains(first.String(), "lead (1 + ") {
				t.Errorf("breakdown %q does not show the lead", first.String())
			}
			if tc.beneath == "" {
				return
			}
			other := got[tc.beneath]
			if other == nil || other.HintLead != 0 {
				t.Fatalf("%s: breakdown %v, want a lead of 0", tc.beneath, other)
			}
			if first.Score <= other.Score {
				t.Errorf("a hint starting as the query does scores %v, the same words in another order %v", first.Score, other.Score)
			}
			// Without the factor, the same words score the same.
			w := search.DefaultWeights
			w.HintLead = 0
			off := explained(t, search.BuildWith(snap, w), tc.q)
			if a, b := off[tc.first], off[tc.beneath]; a == nil || b == nil || a.Score != b.Score || a.HintLeadWeight != 0 {
				t.Errorf("without the lead: %v and %v, want equal scores and no lead weight", a, b)
			}
		})
	}
}
