package search

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// manyIndex indexes a small catalog of four servers for the SearchMany
// tests: tools given as server, name and description.
func manyIndex(t testing.TB) (*Index, *catalog.Snapshot) {
	t.Helper()
	defs := map[string][][2]string{
		"github": {
			{"create_issue", "Open a new issue in a repository."},
			{"create_pull_request", "Propose changes from a branch as a new pull request."},
			{"list_pull_requests", "List the pull requests of a repository, newest first."},
			{"get_file_contents", "Read a file or directory from a repository at a ref."},
			{"search_repositories", "Find repositories by name, topic or language."},
		},
		"slack": {
			{"post_message", "Post a message to a channel."},
			{"list_channels", "List the public channels of the workspace."},
			{"send_direct_message", "Send a private message to one user."},
		},
		"kubernetes": {
			{"get_pod_logs", "Fetch the logs of a pod's container."},
			{"scale_deployment", "Change the replica count of a deployment."},
			{"list_pods", "List the pods of a namespace with their status."},
		},
		"filesystem": {
			{"read_file", "Read the text of a file on disk."},
			{"write_file", "Create or overwrite a file with new content."},
			{"search_files", "Find files whose names match a glob pattern."},
			{"list_directory", "List the files and folders of a directory."},
		},
	}
	var servers []*catalog.Server
	for _, key := range []string{"github", "slack", "kubernetes", "filesystem"} {
		var raws []json.RawMessage
		for _, d := range defs[key] {
			b, err := json.Marshal(map[string]any{"name": d[0], "description": d[1], "inputSchema": map[string]any{"type": "object"}})
			if err != nil {
				t.Fatal(err)
			}
			raws = append(raws, b)
		}
		srv, err := catalog.NewServer(key, raws, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		servers = append(servers, srv)
	}
	snap, err := catalog.NewSnapshot(servers...)
	if err != nil {
		t.Fatal(err)
	}
	return Build(snap), snap
}

func hitIDs(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Tool.ID()
	}
	return out
}

func TestSearchMany(t *testing.T) {
	t.Parallel()
	ix, _ := manyIndex(t)
	ctx := context.Background()
	hidden := func(t *catalog.Tool) bool { return t.ID() != "slack/send_direct_message" }
	tests := []struct {
		name    string
		req     Request
		queries []string
		// first are the IDs the list must start with, in order; has the
		// IDs it must hold anywhere; not those it must not.
		first, has, not []string
		form            Form
		max             int // most hits; 0 means req.MaxResults or 5
		unknown         []string
		err             string
		bare            bool // the error is Search's own, naming no query
	}{
		{name: "two needs", queries: []string{"post a message to a channel", "read the text of a file"},
			has: []string{"slack/post_message", "filesystem/read_file"}, form: FormKeyword},
		{name: "select first, then words", queries: []string{"pod logs", "select:github/create_issue"},
			first: []string{"github/create_issue"}, has: []string{"kubernetes/get_pod_logs"}, form: FormMixed},
		{name: "exact name first", queries: []string{"post a message", "read_file"},
			first: []string{"filesystem/read_file"}, has: []string{"slack/post_message"}, form: FormMixed},
		{name: "select is not cut by max_results", req: Request{MaxResults: 1},
			queries: []string{"list pods", "select:slack/post_message,github/create_issue"},
			first:   []string{"slack/post_message", "github/create_issue"}, not: []string{"kubernetes/list_pods"}, form: FormMixed, max: 2},
		{name: "max_results bounds the ranked hits", req: Request{MaxResults: 2},
			queries: []string{"list", "file", "message"}, form: FormKeyword},
		{name: "servers", req: Request{Servers: []string{"slack"}}, queries: []string{"message", "list"},
			has: []string{"slack/post_message", "slack/list_channels"}, not: []string{"github/list_pull_requests", "kubernetes/list_pods"}},
		{name: "visible hides from every form", req: Request{Visible: hidden},
			queries: []string{"private message to one user", "select:slack/send_direct_message"},
			not:     []string{"slack/send_direct_message"}, unknown: []string{"slack/send_direct_message"}, form: FormMixed},
		{name: "unknown names gathered", queries: []string{"select:nope", "select:github/create_issue,gone"},
			first: []string{"github/create_issue"}, unknown: []string{"nope", "gone"}, form: FormSelect},
		{name: "query and queries", req: Request{Query: "scale a deployment"}, queries: []string{"read_file", "pod logs"},
			first: []string{"filesystem/read_file"}, has: []string{"kubernetes/scale_deployment", "kubernetes/get_pod_logs"}, form: FormMixed},
		{name: "a blank query beside queries is left out", req: Request{Query: "  "}, queries: []string{"pod logs", "post a message"},
			has: []string{"kubernetes/get_pod_logs", "slack/post_message"}, form: FormKeyword},
		{name: "no query", queries: nil, err: "the query is empty", bare: true},
		{name: "empty queries", queries: []string{}, err: "the query is empty", bare: true},
		{name: "too many", queries: strings.Fields("a b c d e f g h i"), err: "9 queries given (query and queries together); the limit is 8", bare: true},
		{name: "too many with query", req: Request{Query: "x"}, queries: strings.Fields("a b c d e f g h"), err: "9 queries given", bare: true},
		{name: "bad query field named", req: Request{Query: "select:" + strings.Repeat("a,", MaxSelectNames+1)}, queries: []string{"list"}, err: "query: bad query: select: names 51 tools; the limit is 50"},
		{name: "one bad query is Search's error", queries: []string{"  "}, err: "bad query: the query is empty", bare: true},
		{name: "a bad query alone is Search's error", req: Request{Query: "select:"}, err: "bad query: select: names no tool", bare: true},
		{name: "bad query names its index", queries: []string{"read file", "list", "   "}, err: "queries[2]: bad query: the query is empty"},
		{name: "bad select names its index", queries: []string{"select: ,", "list"}, err: "queries[0]: bad query: select: names no tool"},
		{name: "bad max_results", req: Request{MaxResults: -1}, queries: []string{"a", "b"}, err: "max_results is -1", bare: true},
		{name: "unknown server", req: Request{Servers: []string{"jira"}}, queries: []string{"a", "b"}, err: `queries[0]: bad query: unknown server "jira"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := ix.SearchMany(ctx, tc.req, tc.queries)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrBadQuery) {
					t.Fatalf("err = %v, want a bad query saying %q", err, tc.err)
				}
				var qe *QueryError
				if got := errors.As(err, &qe); got == tc.bare {
					t.Errorf("err = %v: a QueryError: %v, want %v", err, got, !tc.bare)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ids := hitIDs(res.Hits)
			if len(tc.first) > len(ids) || !slices.Equal(ids[:len(tc.first)], tc.first) {
				t.Errorf("hits %v do not start with %v", ids, tc.first)
			}
			for _, id := range tc.has {
				if !slices.Contains(ids, id) {
					t.Errorf("hits %v lack %s", ids, id)
				}
			}
			for _, id := range tc.not {
				if slices.Contains(ids, id) {
					t.Errorf("hits %v hold %s", ids, id)
				}
			}
			for _, h := range res.Hits {
				if len(tc.req.Servers) > 0 && !slices.Contains(tc.req.Servers, h.Tool.Server) {
					t.Errorf("hit %s is outside servers %v", h.Tool.ID(), tc.req.Servers)
				}
			}
			max := tc.max
			if max == 0 {
				max = cmpOr(tc.req.MaxResults, DefaultMaxResults)
			}
			if len(ids) > max || len(ids) == 0 {
				t.Errorf("%d hits %v, want 1 to %d", len(ids), ids, max)
			}
			if len(slices.Compact(slices.Sorted(slices.Values(ids)))) != len(ids) {
				t.Errorf("duplicate hits: %v", ids)
			}
			if tc.form != "" && res.Form != tc.form {
				t.Errorf("form %q, want %q", res.Form, tc.form)
			}
			if !slices.Equal(res.Unknown, tc.unknown) {
				t.Errorf("unknown %v, want %v", res.Unknown, tc.unknown)
			}
			if res.Total < len(res.Hits) {
				t.Errorf("total %d below the %d hits", res.Total, len(res.Hits))
			}
		})
	}
}

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// TestSearchManyOne: one query, or the same query twice, is answered
// exactly as Search answers it.
func TestSearchManyOne(t *testing.T) {
	t.Parallel()
	ix, _ := manyIndex(t)
	ctx := context.Background()
	for _, q := range []string{"list pull requests", "select:slack/post_message,nope", "read_file", "github", "zzzz qqqq", "^list_"} {
		want, err := ix.Search(ctx, Request{Query: q, MaxResults: 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, qs := range [][]string{{q}, {q, " " + q + " "}} {
			got, err := ix.SearchMany(ctx, Request{MaxResults: 3}, qs)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(hitIDs(got.Hits), hitIDs(want.Hits)) || got.Form != want.Form || got.Total != want.Total ||
				!slices.Equal(got.Unknown, want.Unknown) || !slices.Equal(got.NearestServers, want.NearestServers) {
				t.Errorf("%q: SearchMany(%q) = %+v\nSearch = %+v", q, qs, got, want)
			}
		}
	}
}

// TestSearchManyNothing: when nothing matches, the nearest servers of the
// queries are named.
func TestSearchManyNothing(t *testing.T) {
	t.Parallel()
	ix, _ := manyIndex(t)
	res, err := ix.SearchMany(context.Background(), Request{}, []string{"githbu zzzz", "slak qqqq"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) != 0 || res.Total != 0 || !slices.Contains(res.NearestServers, "github") || !slices.Contains(res.NearestServers, "slack") {
		t.Errorf("result %+v, want no hits and github and slack as nearest servers", res)
	}
}

func TestSearchManyContext(t *testing.T) {
	t.Parallel()
	ix, _ := manyIndex(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := ix.SearchMany(ctx, Request{}, []string{"list", "read"})
	var qe *QueryError
	if !errors.Is(err, context.Canceled) || !errors.As(err, &qe) || qe.Index != 0 {
		t.Errorf("err = %v, want context.Canceled from queries[0]", err)
	}
}

// TestFuse checks the fusion by hand on results written out: scores are
// Σ 1/(60 + rank), each query's best hit is kept, named hits come first.
func TestFuse(t *testing.T) {
	t.Parallel()
	tools := map[string]*catalog.Tool{}
	tool := func(name string) *catalog.Tool {
		if tools[name] == nil {
			tools[name] = &catalog.Tool{Server: "s", Name: name}
		}
		return tools[name]
	}
	ranked := func(form Form, names ...string) Result {
		res := Result{Form: form, Total: len(names)}
		for i, n := range names {
			res.Hits = append(res.Hits, Hit{Tool: tool(n), Score: float64(100 - i), Breakdown: &Breakdown{Sum: float64(100 - i)}})
		}
		return res
	}
	rrf := func(ranks ...int) float64 {
		s := 0.0
		for _, r := range ranks {
			s += 1 / float64(RRFConstant+r)
		}
		return s
	}
	exact := ranked(FormExact, "n", "x", "y")
	exact.Hits[0].Score = exactScore
	type want struct {
		name  string
		score float64 // 0: a named hit, left as it was
	}
	tests := []struct {
		name    string
		results []Result
		max     int
		want    []want
		total   int
		atLeast bool
	}{
		{name: "fused order", max: 5,
			results: []Result{ranked(FormKeyword, "a", "b"), ranked(FormKeyword, "c", "d", "a")},
			want:    []want{{"a", rrf(1, 3)}, {"c", rrf(1)}, {"b", rrf(2)}, {"d", rrf(2)}}, total: 4},
		// Y and Z, found by all three, outscore X; X is q1's best and keeps
		// its place.
		{name: "each query's best kept", max: 2,
			results: []Result{ranked(FormKeyword, "x", "y", "z"), ranked(FormKeyword, "y", "z", "w"), ranked(FormKeyword, "y", "z", "v")},
			want:    []want{{"y", rrf(2, 1, 1)}, {"x", rrf(1)}}, total: 5},
		{name: "without room for every best, the best fused", max: 1,
			results: []Result{ranked(FormKeyword, "x", "y"), ranked(FormKeyword, "y", "x")},
			want:    []want{{"x", rrf(1, 2)}}, total: 2},
		{name: "named first, then ranked", max: 3,
			results: []Result{ranked(FormKeyword, "x", "a"), exact},
			want:    []want{{"n", 0}, {"x", rrf(1, 1)}, {"a", rrf(2)}}, total: 4},
		// The exact-name query has its answer; the place kept goes to the
		// other query's best, though x ties with it and comes first.
		{name: "a query that names a tool keeps no place", max: 2,
			results: []Result{exact, ranked(FormKeyword, "a", "b")},
			want:    []want{{"n", 0}, {"a", rrf(1)}}, total: 5},
		{name: "a named tool is not listed twice", max: 5,
			results: []Result{ranked(FormKeyword, "n", "a"), ranked(FormSelect, "n")},
			want:    []want{{"n", 0}, {"a", rrf(2)}}, total: 2},
		{name: "total a lower bound when a query listed less than it matched", max: 5,
			results: []Result{{Form: FormKeyword, Total: 40, TotalAtLeast: true, Hits: ranked(FormKeyword, "a").Hits}, ranked(FormKeyword, "b")},
			want:    []want{{"a", rrf(1)}, {"b", rrf(1)}}, total: 40, atLeast: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := fuse(tc.results, tc.max)
			var got []string
			for _, h := range res.Hits {
				got = append(got, h.Tool.Name)
			}
			var names []string
			for _, w := range tc.want {
				names = append(names, w.name)
			}
			if !slices.Equal(got, names) {
				t.Fatalf("hits %v, want %v", got, names)
			}
			for i, w := range tc.want {
				if s := res.Hits[i].Score; w.score != 0 && math.Abs(s-w.score) > 1e-15 {
					t.Errorf("%s scores %.6f, want %.6f", w.name, s, w.score)
				}
				if w.score != 0 && res.Hits[i].Breakdown != nil {
					t.Errorf("%s keeps the breakdown of a single query's score", w.name)
				}
			}
			if res.Total != tc.total || res.TotalAtLeast != tc.atLeast {
				t.Errorf("total %d (at least %v), want %d (%v)", res.Total, res.TotalAtLeast, tc.total, tc.atLeast)
			}
		})
	}
}

// TestSearchManyKeepsEveryBest is a property: whatever the queries, when
// MaxResults leaves a place per query, each query's own best hit is in the
// merged list, no tool is listed twice, and every merged hit is one of the
// single queries' hits.
func TestSearchManyKeepsEveryBest(t *testing.T) {
	t.Parallel()
	ix, snap := manyIndex(t)
	ctx := context.Background()
	var vocab []string
	for _, tl := range snap.Tools() {
		vocab = append(vocab, strings.Fields(strings.ToLower(strings.Trim(tl.Description, ".")))...)
		vocab = append(vocab, tl.Name, tl.Server)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 300 {
		n := 2 + rng.IntN(MaxQueries-1)
		var qs []string
		for range n {
			words := make([]string, 1+rng.IntN(3))
			for i := range words {
				words[i] = vocab[rng.IntN(len(vocab))]
			}
			qs = append(qs, strings.Join(words, " "))
		}
		max := n + rng.IntN(MaxMaxResults-n+1)
		merged, err := ix.SearchMany(ctx, Request{MaxResults: max}, qs)
		if err != nil {
			t.Fatalf("round %d %q: %v", round, qs, err)
		}
		ids := hitIDs(merged.Hits)
		all := map[string]bool{}
		named := map[string]bool{}
		var singles []Result
		for _, q := range qs {
			one, err := ix.Search(ctx, Request{Query: q, MaxResults: max})
			if err != nil {
				t.Fatalf("round %d %q: %v", round, q, err)
			}
			singles = append(singles, one)
			for _, h := range one.Hits {
				all[h.Tool.ID()] = true
				if h.Score >= exactScore {
					named[h.Tool.ID()] = true
				}
			}
		}
		// Named tools come first and may take the places kept for the
		// others' best hits.
		if len(named)+n <= max {
			for i, one := range singles {
				if len(one.Hits) > 0 && !slices.Contains(ids, one.Hits[0].Tool.ID()) {
					t.Errorf("round %d: %q's best hit %s is not among %v (queries %q, max %d)", round, qs[i], one.Hits[0].Tool.ID(), ids, qs, max)
				}
			}
		}
		if len(slices.Compact(slices.Sorted(slices.Values(ids)))) != len(ids) {
			t.Errorf("round %d: duplicates in %v", round, ids)
		}
		for _, id := range ids {
			if !all[id] {
				t.Errorf("round %d: %s was found by no single query of %q", round, id, qs)
			}
		}
		if merged.Total < len(ids) {
			t.Errorf("round %d: total %d below %d hits", round, merged.Total, len(ids))
		}
	}
}

// FuzzSearchMany: whatever the queries, SearchMany does not panic, lists
// no tool twice, keeps to MaxResults beside the named tools, and fails
// only with a bad query.
func FuzzSearchMany(f *testing.F) {
	f.Add("list pods", "select:slack/post_message,x", "read_file", 3)
	f.Add("", "  ", "^get_", 0)
	f.Add("(?i)message", "github", "+zzz", 50)
	f.Add("a", "a", "A", -1)
	ix, _ := manyIndex(f)
	f.Fuzz(func(t *testing.T, q, a, b string, max int) {
		res, err := ix.SearchMany(context.Background(), Request{Query: q, MaxResults: max}, []string{a, b})
		if err != nil {
			if !errors.Is(err, ErrBadQuery) {
				t.Fatalf("error %v is not a bad query", err)
			}
			return
		}
		ids := hitIDs(res.Hits)
		if len(slices.Compact(slices.Sorted(slices.Values(ids)))) != len(ids) {
			t.Fatalf("duplicates in %v", ids)
		}
		named := 0
		for _, h := range res.Hits {
			if h.Score >= exactScore {
				named++
			}
		}
		if limit := min(cmpOr(max, DefaultMaxResults), MaxMaxResults); len(ids)-named > limit {
			t.Fatalf("%d ranked hits past max_results %d: %v", len(ids)-named, limit, ids)
		}
		if res.Total < len(ids) {
			t.Fatalf("total %d below the %d hits", res.Total, len(ids))
		}
	})
}
