package search

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/toolsearch/toolsearch/core/catalog"
)

// fixtureTool is a compact way to write a tool for the tests.
type fixtureTool struct {
	name, desc string
	params     map[string]string
	meta       string // raw _meta object, optional
}

func rawTool(ft fixtureTool) json.RawMessage {
	props := map[string]any{}
	for k, v := range ft.params {
		props[k] = map[string]any{"type": "string", "description": v}
	}
	m := map[string]any{
		"name":        ft.name,
		"description": ft.desc,
		"inputSchema": map[string]any{"type": "object", "properties": props},
	}
	if ft.meta != "" {
		m["_meta"] = json.RawMessage(ft.meta)
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

func fixtureServer(t testing.TB, key string, tools ...fixtureTool) *catalog.Server {
	t.Helper()
	raws := make([]json.RawMessage, len(tools))
	for i, ft := range tools {
		raws[i] = rawTool(ft)
	}
	srv, err := catalog.NewServer(key, raws, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// fixtureServers is a small catalog in the shape of real ones.
func fixtureServers(t testing.TB) []*catalog.Server {
	return []*catalog.Server{
		fixtureServer(t, "github",
			fixtureTool{name: "create_issue", desc: "Open a new issue in a repository.", params: map[string]string{"repo": "Repository name", "title": "Issue title"}},
			fixtureTool{name: "create_pull_request", desc: "Propose changes from a branch as a new pull request.", params: map[string]string{"head": "Branch with the changes", "base": "Branch to merge into"}},
			fixtureTool{name: "list_pull_requests", desc: "List the pull requests of a repository, newest first."},
			fixtureTool{name: "get_file_contents", desc: "Read a file or directory from a repository at a ref.", params: map[string]string{"path": "Path inside the repository"}},
			fixtureTool{name: "search_repositories", desc: "Find repositories by name, topic or language."},
		),
		fixtureServer(t, "slack",
			fixtureTool{name: "post_message", desc: "Post a message to a channel.", params: map[string]string{"channel": "Channel ID", "text": "Message text"}},
			fixtureTool{name: "list_channels", desc: "List the public channels of the workspace."},
			fixtureTool{name: "send_direct_message", desc: "Send a private message to one user.", params: map[string]string{"user": "User ID"}},
		),
		fixtureServer(t, "kubernetes",
			fixtureTool{name: "get_pod_logs", desc: "Fetch the logs of a pod's container.", params: map[string]string{"pod": "Pod name", "namespace": "Namespace"}},
			fixtureTool{name: "scale_deployment", desc: "Change the replica count of a deployment."},
		),
		fixtureServer(t, "filesystem",
			fixtureTool{name: "read_file", desc: "Read the text of a file on disk."},
			fixtureTool{name: "write_file", desc: "Create or overwrite a file with new content."},
			fixtureTool{name: "search_files", desc: "Find files whose names match a glob pattern."},
		),
		fixtureServer(t, "postgres",
			fixtureTool{name: "query", desc: "Run a read-only SQL statement and return the rows."},
			fixtureTool{name: "list_tables", desc: "List the tables of the database schema."},
		),
		fixtureServer(t, "jira",
			fixtureTool{name: "createIssue", desc: "File a ticket in a project.", meta: `{"anthropic/searchHint":"bug report tracker"}`},
			fixtureTool{name: "searchIssues", desc: "Search tickets with a JQL expression."},
		),
		fixtureServer(t, "gitlab",
			fixtureTool{name: "create_merge_request", desc: "Open a merge request between two branches."},
			fixtureTool{name: "create_issue", desc: "Create an issue in a GitLab project."},
		),
	}
}

func fixtureIndex(t testing.TB) (*catalog.Snapshot, *Index) {
	t.Helper()
	snap, err := catalog.NewSnapshot(fixtureServers(t)...)
	if err != nil {
		t.Fatal(err)
	}
	return snap, Build(snap)
}

func ids(res Result) []string {
	out := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		out[i] = h.Tool.ID()
	}
	return out
}

func TestQueryForms(t *testing.T) {
	t.Parallel()
	_, ix := fixtureIndex(t)
	tests := []struct {
		name      string
		req       Request
		form      Form
		wantFirst []string // the first hits, in order
		unknown   []string
		ambiguous []string
		absent    []string // IDs that must not be in the hits
	}{
		{name: "select keeps order and drops duplicates",
			req:  Request{Query: "select:slack/post_message,github/create_issue,slack__post_message"},
			form: FormSelect, wantFirst: []string{"slack/post_message", "github/create_issue"}},
		{name: "select reports unknown names",
			req:  Request{Query: "select:read_file, nope, mcp__postgres__query"},
			form: FormSelect, wantFirst: []string{"filesystem/read_file", "postgres/query"}, unknown: []string{"nope"}},
		{name: "select bare name on two servers is ambiguous",
			req:  Request{Query: "select:create_issue"},
			form: FormSelect, wantFirst: []string{"github/create_issue", "gitlab/create_issue"}, ambiguous: []string{"create_issue"}},
		{name: "select is case-insensitive in the prefix",
			req:  Request{Query: "SELECT:list_tables"},
			form: FormSelect, wantFirst: []string{"postgres/list_tables"}},
		{name: "exact bare name",
			req:  Request{Query: "scale_deployment"},
			form: FormExact, wantFirst: []string{"kubernetes/scale_deployment"}},
		{name: "exact camelCase name",
			req:  Request{Query: "searchIssues"},
			form: FormExact, wantFirst: []string{"jira/searchIssues"}},
		{name: "exact name inside a longer query wins over broad matches",
			req:  Request{Query: "use list_tables to see what the pull request search repository files contain"},
			form: FormExact, wantFirst: []string{"postgres/list_tables"}},
		{name: "exact wire name",
			req:  Request{Query: "github__get_file_contents"},
			form: FormExact, wantFirst: []string{"github/get_file_contents"}},
		{name: "exact Claude Code name",
			req:  Request{Query: "mcp__slack__list_channels"},
			form: FormExact, wantFirst: []string{"slack/list_channels"}},
		{name: "server prefix with separator",
			req:  Request{Query: "slack__"},
			form: FormServer, wantFirst: []string{"slack/post_message", "slack/list_channels", "slack/send_direct_message"}},
		{name: "server prefix Claude Code style",
			req:  Request{Query: "mcp__postgres"},
			form: FormServer, wantFirst: []string{"postgres/query", "postgres/list_tables"}},
		{name: "server name alone",
			req:  Request{Query: "Kubernetes"},
			form: FormServer, wantFirst: []string{"kubernetes/get_pod_logs", "kubernetes/scale_deployment"}},
		{name: "keywords",
			req:  Request{Query: "post a message to a channel"},
			form: FormKeyword, wantFirst: []string{"slack/post_message"}},
		{name: "abbreviation PR",
			req:  Request{Query: "open a PR"},
			form: FormKeyword, wantFirst: []string{"github/create_pull_request"}},
		{name: "abbreviation k8s and stemming",
			req:  Request{Query: "k8s pod logging"},
			form: FormKeyword, wantFirst: []string{"kubernetes/get_pod_logs"}},
		{name: "abbreviation DM",
			req:  Request{Query: "DM a teammate"},
			form: FormKeyword, wantFirst: []string{"slack/send_direct_message"}},
		{name: "abbreviation MR",
			req:  Request{Query: "raise an MR"},
			form: FormKeyword, wantFirst: []string{"gitlab/create_merge_request"}},
		{name: "search hint is searched",
			req:  Request{Query: "bug report"},
			form: FormKeyword, wantFirst: []string{"jira/createIssue"}},
		{name: "required term filters",
			req:  Request{Query: "create issue +gitlab"},
			form: FormKeyword, wantFirst: []string{"gitlab/create_issue"}, absent: []string{"github/create_issue", "jira/createIssue"}},
		{name: "server filter",
			req:  Request{Query: "create issue", Servers: []string{"jira"}},
			form: FormKeyword, wantFirst: []string{"jira/createIssue"}, absent: []string{"github/create_issue"}},
		{name: "regex mode",
			req:  Request{Query: "^create_.*request$", Mode: ModeRegex},
			form: FormRegex, wantFirst: []string{"github/create_pull_request", "gitlab/create_merge_request"}},
		{name: "auto mode reads a regex",
			req:  Request{Query: "(?i)^list_"},
			form: FormRegex, wantFirst: []string{"postgres/list_tables", "slack/list_channels", "github/list_pull_requests"}},
		{name: "auto mode falls back to words when a pattern finds nothing",
			req:  Request{Query: "post a message [urgent]"},
			form: FormKeyword, wantFirst: []string{"slack/post_message"}},
		{name: "max results",
			req:  Request{Query: "file", MaxResults: 1},
			form: FormKeyword, wantFirst: []string{"filesystem/read_file"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := tc.req
			req.Explain = true
			res, err := ix.Search(context.Background(), req)
			if err != nil {
				t.Fatalf("Search(%q): %v", tc.req.Query, err)
			}
			// Without Explain a keyword hit says nothing of why; the
			// other forms still say how they found a tool.
			req.Explain = false
			quiet, err := ix.Search(context.Background(), req)
			if err != nil {
				t.Fatalf("Search(%q) without Explain: %v", tc.req.Query, err)
			}
			if !slices.Equal(ids(quiet), ids(res)) {
				t.Errorf("without Explain the hits are %v, with it %v", ids(quiet), ids(res))
			}
			for i, h := range quiet.Hits {
				// A hit the form itself found (a keyword hit can follow
				// an exact name) says how; a keyword hit says nothing.
				byForm := quiet.Form != FormKeyword && h.Score == exactScore || quiet.Form == FormServer || quiet.Form == FormRegex
				switch {
				case byForm && (h.Why == "" || h.Why != res.Hits[i].Why):
					t.Errorf("%s hit %s says %q without Explain, %q with it", quiet.Form, h.Tool.ID(), h.Why, res.Hits[i].Why)
				case !byForm && h.Why != "":
					t.Errorf("keyword hit %s explains %q without Explain", h.Tool.ID(), h.Why)
				}
			}
			got := ids(res)
			if res.Form != tc.form {
				t.Errorf("form = %q, want %q (hits %v)", res.Form, tc.form, got)
			}
			if len(got) < len(tc.wantFirst) || !slices.Equal(got[:len(tc.wantFirst)], tc.wantFirst) {
				t.Errorf("hits = %v, want them to start with %v", got, tc.wantFirst)
			}
			if !slices.Equal(res.Unknown, tc.unknown) {
				t.Errorf("unknown = %v, want %v", res.Unknown, tc.unknown)
			}
			if !slices.Equal(res.Ambiguous, tc.ambiguous) {
				t.Errorf("ambiguous = %v, want %v", res.Ambiguous, tc.ambiguous)
			}
			for _, a := range tc.absent {
				if slices.Contains(got, a) {
					t.Errorf("hits %v contain %s", got, a)
				}
			}
			max := tc.req.MaxResults
			if max == 0 {
				max = DefaultMaxResults
			}
			if tc.form != FormSelect && len(got) > max {
				t.Errorf("%d hits, more than max_results %d", len(got), max)
			}
			for _, h := range res.Hits {
				if h.Why == "" || h.Score <= 0 {
					t.Errorf("hit %s has score %v and why %q", h.Tool.ID(), h.Score, h.Why)
				}
			}
		})
	}
}

func TestBadQueries(t *testing.T) {
	t.Parallel()
	_, ix := fixtureIndex(t)
	tests := []struct {
		name string
		req  Request
		want string // substring of the error
	}{
		{"empty", Request{Query: "   "}, "empty"},
		{"invalid utf-8", Request{Query: "abc\xff"}, "UTF-8"},
		{"negative max", Request{Query: "x", MaxResults: -1}, "max_results"},
		{"negative min score", Request{Query: "x", MinScore: -1}, "min_score"},
		{"min score not a number", Request{Query: "x", MinScore: math.NaN()}, "min_score"},
		{"unknown server", Request{Query: "x", Servers: []string{"nope"}}, `unknown server "nope"`},
		{"empty select", Request{Query: "select: , "}, "names no tool"},
		{"too many select names", Request{Query: "select:" + strings.Repeat("a,", MaxSelectNames+1)}, "limit is 50"},
		{"too many required terms", Request{Query: "+" + strings.ReplaceAll(manyWords(MaxTerms+1), " ", " +")}, "+words need more than 32"},
		{"invalid regex names the position", Request{Query: "abc(", Mode: ModeRegex}, "position"},
		{"unsupported regex", Request{Query: "(a)\\1", Mode: ModeRegex}, "position 3"},
		{"regex too long", Request{Query: strings.Repeat("a", MaxRegexLen+1), Mode: ModeRegex}, "limit is 200"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ix.Search(context.Background(), tc.req)
			if err == nil {
				t.Fatalf("Search(%.40q) succeeded, want an error containing %q", tc.req.Query, tc.want)
			}
			if !errors.Is(err, ErrBadQuery) {
				t.Errorf("error %v does not wrap ErrBadQuery", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

// TestMinScore checks that a search returns the MaxResults best tools
// that match at all, and only those scoring at least MinScore when asked.
func TestMinScore(t *testing.T) {
	t.Parallel()
	_, ix := fixtureIndex(t)
	ctx := context.Background()
	all, err := ix.Search(ctx, Request{Query: "create a new issue in the repository", MaxResults: 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Hits) < 4 || all.Total != len(all.Hits) {
		t.Fatalf("%d hits of %d matched: want every match returned", len(all.Hits), all.Total)
	}
	min := (all.Hits[0].Score + all.Hits[len(all.Hits)-1].Score) / 2
	some, err := ix.Search(ctx, Request{Query: "create a new issue in the repository", MaxResults: 20, MinScore: min})
	if err != nil {
		t.Fatal(err)
	}
	if len(some.Hits) == 0 || len(some.Hits) >= len(all.Hits) {
		t.Fatalf("min score %v kept %d of %d hits", min, len(some.Hits), len(all.Hits))
	}
	for i, h := range some.Hits {
		if h.Score < min || h.Tool != all.Hits[i].Tool {
			t.Errorf("hit %d: %s %v (min %v), want %s", i, h.Tool.ID(), h.Score, min, all.Hits[i].Tool.ID())
		}
	}
	if some.Total != all.Total {
		t.Errorf("total %d with a min score, %d without: it counts every match", some.Total, all.Total)
	}
}

// TestLongQueries checks that a query is never refused for its length: a
// pasted task of several kilobytes, or of more distinct terms than ranking
// reads, is answered from its most informative words.
func TestLongQueries(t *testing.T) {
	t.Parallel()
	_, ix := fixtureIndex(t)
	filler := manyWords(3 * MaxTerms) // words no tool has
	tests := []struct {
		name  string
		query string
		want  string // the top hit
	}{
		{"instruction and request", "Given a task, retrieve the tools that can do it. " + filler + " fetch the logs of a pod", "kubernetes/get_pod_logs"},
		{"the request first", "scale the replica count of a deployment " + filler, "kubernetes/scale_deployment"},
		{"a pasted task of 4 KB", strings.Repeat("please ", 500) + "post a message to a channel", "slack/post_message"},
		{"over the byte limit", "list the tables of the database schema " + strings.Repeat("zz ", MaxQueryLen), "postgres/list_tables"},
		{"a required word among many", filler + " +pod logs", "kubernetes/get_pod_logs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := ix.Search(context.Background(), Request{Query: tc.query})
			if err != nil {
				t.Fatalf("a %d-byte query was refused: %v", len(tc.query), err)
			}
			if len(res.Hits) == 0 || res.Hits[0].Tool.ID() != tc.want {
				t.Fatalf("hits %v, want %s first", ids(res), tc.want)
			}
		})
	}
}

// TestInformativeTerms checks which terms a long query keeps: the ones
// its +words need, then the rarest, MaxTerms in all.
func TestInformativeTerms(t *testing.T) {
	t.Parallel()
	_, ix := fixtureIndex(t)
	// Common words of the fixture first, then one rare word: the rare one
	// must survive the cut.
	var ws []string
	for range 3 {
		ws = append(ws, strings.Fields(manyWords(MaxTerms))...)
	}
	q := strings.Join(ws, " ") + " kubernetes replica"
	terms := ix.QueryTerms(q)
	if len(terms) != MaxTerms {
		t.Fatalf("%d terms kept, want %d", len(terms), MaxTerms)
	}
	for _, want := range []string{"kubernet", "replica"} {
		if !slices.Contains(terms, want) {
			t.Errorf("terms %v lack %q", terms, want)
		}
	}
	req := ix.QueryTerms(manyWords(2*MaxTerms) + " +wordzz")
	if !slices.Contains(req, "wordzz") {
		t.Errorf("the +word's term was dropped: %v", req)
	}
}

func manyWords(n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = fmt.Sprintf("word%c%c", 'a'+i%26, 'a'+i/26)
	}
	return strings.Join(ws, " ")
}

// TestNoDuplicateHits covers queries whose words name a server: such a word
// scores nothing on that server's own tools (the server boost counts it), and
// must not make a tool appear twice.
func TestNoDuplicateHits(t *testing.T) {
	t.Parallel()
	_, ix := fixtureIndex(t)
	for _, q := range []string{"jira create ticket", "slack post message to channel", "kubernetes pod logs scale", "github gitlab create issue"} {
		res, err := ix.Search(context.Background(), Request{Query: q, MaxResults: 20})
		if err != nil {
			t.Fatal(err)
		}
		got := ids(res)
		if !sameSet(got, slices.Compact(slices.Sorted(slices.Values(got)))) {
			t.Errorf("%q: duplicate hits %v", q, got)
		}
	}
}

func TestNoMatchNamesNearestServers(t *testing.T) {
	t.Parallel()
	_, ix := fixtureIndex(t)
	res, err := ix.Search(context.Background(), Request{Query: "kubernetis zzzqqq"})
	if err != nil {
		t.Fatal(err)
	}
	// "kubernetis" matches nothing, so nothing is padded in.
	if len(res.Hits) != 0 {
		t.Fatalf("hits = %v, want none", ids(res))
	}
	if len(res.NearestServers) == 0 || res.NearestServers[0] != "kubernetes" {
		t.Errorf("nearest servers = %v, want kubernetes first", res.NearestServers)
	}
}

func TestWeakMatchesAreNotPadding(t *testing.T) {
	t.Parallel()
	_, ix := fixtureIndex(t)
	res, err := ix.Search(context.Background(), Request{Query: "replica count deployment", MaxResults: 10})
	if err != nil {
		t.Fatal(err)
	}
	got := ids(res)
	if len(got) == 0 || got[0] != "kubernetes/scale_deployment" {
		t.Fatalf("hits = %v, want kubernetes/scale_deployment first", got)
	}
	for _, h := range res.Hits {
		if h.Score < res.Hits[0].Score*DefaultWeights.MinRelative {
			t.Errorf("hit %s scores %.3f, under %.0f%% of the best %.3f", h.Tool.ID(), h.Score, 100*DefaultWeights.MinRelative, res.Hits[0].Score)
		}
	}
}

func TestVisibilityHidesEveryForm(t *testing.T) {
	t.Parallel()
	_, ix := fixtureIndex(t)
	hidden := "github/create_issue"
	visible := func(tl *catalog.Tool) bool { return tl.ID() != hidden }
	queries := []Request{
		{Query: "select:github/create_issue"},
		{Query: "github__create_issue"},
		{Query: "mcp__github__create_issue"},
		{Query: "create_issue"},
		{Query: "github"},
		{Query: "open a new issue in a repository"},
		{Query: "create_issue", Mode: ModeRegex},
		{Query: ".*issue.*"},
	}
	for _, q := range queries {
		q.Visible = visible
		q.MaxResults = MaxMaxResults
		res, err := ix.Search(context.Background(), q)
		if err != nil {
			t.Fatalf("%q: %v", q.Query, err)
		}
		if slices.Contains(ids(res), hidden) {
			t.Errorf("%q (mode %v) found the hidden tool: %v", q.Query, q.Mode, ids(res))
		}
		if res.Form == FormSelect && !slices.Equal(res.Unknown, []string{"github/create_issue"}) {
			t.Errorf("select of a hidden tool: unknown = %v, want it reported as unknown", res.Unknown)
		}
	}
}

func TestCatastrophicRegexIsLinear(t *testing.T) {
	t.Parallel()
	// Under MaxRegexText, so that the regex reads the final '!'.
	long := strings.Repeat("a", MaxRegexText-1)
	srv := fixtureServer(t, "slow", fixtureTool{name: "bang", desc: long + "!"}, fixtureTool{name: "plain", desc: long})
	snap, err := catalog.NewSnapshot(srv)
	if err != nil {
		t.Fatal(err)
	}
	ix := Build(snap)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := ix.Search(ctx, Request{Query: "(a+)+$", Mode: ModeRegex})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(res); !slices.Equal(got, []string{"slow/plain"}) {
		t.Errorf("hits = %v, want [slow/plain] (the other description ends in '!')", got)
	}
}

func TestCancelledContext(t *testing.T) {
	t.Parallel()
	_, ix := fixtureIndex(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ix.Search(ctx, Request{Query: "issue"}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// TestUpdateMatchesRebuild checks that an index updated server by server
// answers exactly like one built from scratch on the final snapshot, through
// enough updates to force compaction.
func TestUpdateMatchesRebuild(t *testing.T) {
	t.Parallel()
	snap, ix := fixtureIndex(t)
	queries := []string{"create issue", "pull request", "file", "message", "logs", "select:create_issue,query", "github__", "^list", "deploy"}
	for round := 0; round < 2*maxSegments+3; round++ {
		var change catalog.Change
		key := fmt.Sprintf("extra%d", round%4)
		switch {
		case round%5 == 4:
			change = catalog.Put(fixtureServer(t, "slack",
				fixtureTool{name: "post_message", desc: fmt.Sprintf("Post a message to a channel (round %d).", round)},
				fixtureTool{name: "archive_channel", desc: "Archive a channel nobody uses."}))
		case round%3 == 2:
			if _, ok := snap.Server(key); !ok {
				continue
			}
			change = catalog.Remove(key)
		default:
			change = catalog.Put(fixtureServer(t, key,
				fixtureTool{name: fmt.Sprintf("worklog_deploy_%d", round), desc: "Deploy the service to production and log the work."},
				fixtureTool{name: "network_status", desc: "Check the work log of the network."},
				fixtureTool{name: "create_issue", desc: fmt.Sprintf("Create an issue, version %d.", round)}))
		}
		next, diff, err := snap.Apply(change)
		if err != nil {
			t.Fatal(err)
		}
		snap = next
		ix = ix.Update(snap, diff.Servers...)
		fresh := Build(snap)
		checkDF(t, ix)
		if ix.Len() != fresh.Len() || ix.Len() != len(snap.Tools()) {
			t.Fatalf("round %d: updated index has %d tools, fresh %d, snapshot %d", round, ix.Len(), fresh.Len(), len(snap.Tools()))
		}
		for _, q := range queries {
			a, errA := ix.Search(context.Background(), Request{Query: q, MaxResults: 20})
			b, errB := fresh.Search(context.Background(), Request{Query: q, MaxResults: 20})
			if (errA == nil) != (errB == nil) {
				t.Fatalf("round %d %q: errors differ: %v vs %v", round, q, errA, errB)
			}
			if !sameSet(ids(a), ids(b)) {
				t.Errorf("round %d %q: updated index found %v, fresh index %v", round, q, ids(a), ids(b))
			}
		}
	}
}

// TestUpdateBringsFirstHints checks that the first written hints an update
// brings give every tool its own phrasings, so that the tools of servers
// the update did not touch are scored as a fresh build scores them, and
// that later updates are made in place again.
func TestUpdateBringsFirstHints(t *testing.T) {
	t.Parallel()
	snap, ix := fixtureIndex(t)
	if ix.phrased {
		t.Fatal("an index without written hints keeps phrasings")
	}
	hinted := fixtureServer(t, "notes", fixtureTool{name: "add_note", desc: "Add a note to the notebook."})
	hinted.Tools[0].Hints = []string{"jot something down", "remember this for later"}
	for round, srv := range []*catalog.Server{hinted, fixtureServer(t, "extra", fixtureTool{name: "create_issue", desc: "Open an issue."})} {
		next, diff, err := snap.Apply(catalog.Put(srv))
		if err != nil {
			t.Fatal(err)
		}
		snap = next
		updated := ix.Update(snap, diff.Servers...)
		if !updated.phrased {
			t.Fatalf("round %d: the index with written hints keeps no phrasings", round)
		}
		if got, want := len(updated.segs), len(ix.segs)+round; got != want {
			t.Errorf("round %d: %d segments, want %d (built anew once, then updated in place)", round, got, want)
		}
		ix = updated
		fresh := Build(snap)
		for _, q := range []string{"create issue", "pull request", "read file", "jot down a note"} {
			a, errA := ix.Search(context.Background(), Request{Query: q, MaxResults: 10, Explain: true})
			b, errB := fresh.Search(context.Background(), Request{Query: q, MaxResults: 10, Explain: true})
			if errA != nil || errB != nil {
				t.Fatalf("%q: %v / %v", q, errA, errB)
			}
			// An index updated in place keeps its average field lengths,
			// so scores may differ a little from a fresh build's: the
			// tools found and their phrasings' parts may not.
			if !sameSet(ids(a), ids(b)) {
				t.Errorf("round %d %q: updated index found %v, fresh index %v", round, q, ids(a), ids(b))
				continue
			}
			fresh := map[string]*Breakdown{}
			for _, h := range b.Hits {
				fresh[h.Tool.ID()] = h.Breakdown
			}
			for _, h := range a.Hits {
				got, want := h.Breakdown, fresh[h.Tool.ID()]
				if got.HintShare != want.HintShare || got.HintLead != want.HintLead || got.HintWeight == 0 {
					t.Errorf("round %d %q: %s has phrasing share %v lead %v (weight %v), fresh %v %v", round, q, h.Tool.ID(),
						got.HintShare, got.HintLead, got.HintWeight, want.HintShare, want.HintLead)
				}
			}
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func TestUpdateLeavesOldIndexAlone(t *testing.T) {
	t.Parallel()
	snap, ix := fixtureIndex(t)
	next, diff, err := snap.Apply(catalog.Remove("slack"))
	if err != nil {
		t.Fatal(err)
	}
	ix2 := ix.Update(next, diff.Servers...)
	for _, tc := range []struct {
		ix   *Index
		want bool
	}{{ix, true}, {ix2, false}} {
		res, err := tc.ix.Search(context.Background(), Request{Query: "post_message"})
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.Contains(ids(res), "slack/post_message"); got != tc.want {
			t.Errorf("found slack/post_message = %v, want %v", got, tc.want)
		}
	}
}

func TestConcurrentSearchAndUpdate(t *testing.T) {
	t.Parallel()
	snap, ix := fixtureIndex(t)
	var mu sync.Mutex
	cur := ix
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				mu.Lock()
				x := cur
				mu.Unlock()
				if _, err := x.Search(context.Background(), Request{Query: "create issue in repo"}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i := 0; i < 20; i++ {
		next, diff, err := snap.Apply(catalog.Put(fixtureServer(t, "churn",
			fixtureTool{name: fmt.Sprintf("tool_%d", i), desc: "Create things in a repo."})))
		if err != nil {
			t.Fatal(err)
		}
		snap = next
		x := cur.Update(snap, diff.Servers...)
		mu.Lock()
		cur = x
		mu.Unlock()
	}
	wg.Wait()
}

func TestAnalyze(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"createPullRequest", []string{"creat", "pull", "request", "createpullrequest"}},
		{"create_pull_request", []string{"creat", "pull", "request", "createpullrequest"}},
		{"get-file.contents", []string{"get", "file", "content", "getfilecontents"}},
		{"HTTPServerError", []string{"http", "server", "error", "httpservererror"}},
		{"the repos of my org", []string{"repositori", "organ"}},
		{"K8s PR", []string{"kubernet", "pull", "request"}},
		{"to-do list", []string{"todo", "list"}},
		{"EC2 v1", []string{"ec2", "instanc", "v1"}},
		{"DSNs", []string{"dsn"}},
		{"don't", []string{"dont"}},
	}
	for _, tc := range tests {
		var got []string
		for _, tk := range analyze(tc.in, nil) {
			got = append(got, tk.term)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("analyze(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestParseMode(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Mode{"": ModeAuto, "auto": ModeAuto, "Keyword": ModeKeyword, "regex": ModeRegex} {
		got, err := ParseMode(in)
		if err != nil || got != want {
			t.Errorf("ParseMode(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseMode("fuzzy"); err == nil || !strings.Contains(err.Error(), `"fuzzy"`) {
		t.Errorf("ParseMode(fuzzy) error = %v, want one naming the mode", err)
	}
}

// FuzzSearch feeds arbitrary queries to every mode: no panic, only
// ErrBadQuery errors, never more hits than asked for.
func FuzzSearch(f *testing.F) {
	for _, s := range []string{
		"select:a,b", "select:", "github__", "mcp__slack", "create issue +github", "+", "++x", "(?i)^list_",
		"[", "a{2,1}", "(a+)+$", "PR k8s DM", "\x00", "createPullRequest", "\u00e9t\u00e9 caf\u00e9", "a\\", "x|y|",
	} {
		f.Add(s, 0, 3)
	}
	_, ix := fixtureIndex(f)
	f.Fuzz(func(t *testing.T, q string, mode, max int) {
		req := Request{Query: q, Mode: Mode(((mode % 3) + 3) % 3), MaxResults: max % 60}
		res, err := ix.Search(context.Background(), req)
		if err != nil {
			if !errors.Is(err, ErrBadQuery) {
				t.Fatalf("Search(%q) error %v is not ErrBadQuery", q, err)
			}
			return
		}
		seen := map[string]bool{}
		for _, h := range res.Hits {
			if seen[h.Tool.ID()] {
				t.Fatalf("Search(%q): %s returned twice: %v", q, h.Tool.ID(), ids(res))
			}
			seen[h.Tool.ID()] = true
		}
		limit := req.MaxResults
		if limit == 0 {
			limit = DefaultMaxResults
		}
		if res.Form != FormSelect && len(res.Hits) > min(limit, MaxMaxResults) {
			t.Fatalf("Search(%q): %d hits, max %d", q, len(res.Hits), limit)
		}
	})
}

func TestCompoundNamesSplit(t *testing.T) {
	t.Parallel()
	srv := fixtureServer(t, "tracker",
		fixtureTool{name: "create_worklog", desc: "Record time spent."},
		fixtureTool{name: "list_items", desc: "List the work items of a project and their log of changes."},
		fixtureTool{name: "get_item", desc: "Get one work item with its change log."},
		fixtureTool{name: "close_item", desc: "Close a work item and note it in the log."},
		fixtureTool{name: "network_status", desc: "Report whether the network works."},
	)
	snap, err := catalog.NewSnapshot(srv)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Build(snap).Search(context.Background(), Request{Query: "worklog"})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(res); len(got) == 0 || got[0] != "tracker/create_worklog" {
		t.Fatalf("worklog: %v", got)
	}
	res, err = Build(snap).Search(context.Background(), Request{Query: "log work"})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(res); len(got) == 0 || got[0] != "tracker/create_worklog" {
		t.Errorf("log work: hits %v, want tracker/create_worklog first (its name splits into work + log)", got)
	}
}

// checkDF verifies that the index's document frequencies are exactly the
// live postings of its segments.
func checkDF(t *testing.T, ix *Index) {
	t.Helper()
	want := map[string]int32{}
	for _, seg := range ix.segs {
		for term, l := range seg.post {
			for _, p := range l.ps {
				if seg.deadDoc == nil || !seg.deadDoc[p.doc()] {
					want[term]++
				}
			}
		}
	}
	for term, n := range want {
		if ix.df[term] != n {
			t.Errorf("df[%q] = %d, live postings %d", term, ix.df[term], n)
		}
	}
	for term, n := range ix.df {
		if want[term] == 0 {
			t.Errorf("df[%q] = %d with no live posting", term, n)
		}
	}
}

// FuzzAnalyzeCached checks that the allocation-free path used by index
// builds analyses text exactly like the general path used by queries.
func FuzzAnalyzeCached(f *testing.F) {
	for _, s := range []string{"createPullRequest to-do list", "HTTPServerError DSNs K8s PR", "get-file.contents don't", "a_b_c_d_e_f_g_h_i_j_k_l_m_n_o_p_q_r_s_t_u_v_w_x_y_z_1_2_3", "caf\u00e9 na\u00efve", "EC2 v1 _x_ x__y", "how-to The-And", strings.Repeat("Ab", 60)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cache := map[string]string{}
		for round := 0; round < 2; round++ { // the second round reads the cache
			a := analyzeWith(cache, s, nil)
			b := analyzeWith(nil, s, nil)
			if !slices.Equal(a, b) {
				t.Fatalf("round %d: analyzeWith(cache, %q) = %v, general path %v", round, s, a, b)
			}
		}
	})
}

// TestCompoundsIgnoreOthersHints: whether a tool's name splits depends on
// the words of the tools' definitions, never on hints written for other
// tools, whether the index is built whole or the tool's server arrives by
// Update. The control (the word in definitions) shows the split happens.
func TestCompoundsIgnoreOthersHints(t *testing.T) {
	t.Parallel()
	board := func() *catalog.Server {
		return fixtureServer(t, "board",
			fixtureTool{name: "zorkplank_fetch", desc: "Fetch one entry."},
			fixtureTool{name: "list_planks", desc: "List every plank."},
			fixtureTool{name: "count_planks", desc: "Count the planks."},
			fixtureTool{name: "sort_planks", desc: "Sort the planks by size."},
		)
	}
	others := func(zorkIn string) *catalog.Server {
		var tools []fixtureTool
		for _, n := range []string{"alpha", "beta", "gamma"} {
			desc := "Does a thing with planks."
			if zorkIn == "description" {
				desc = "Does a zork with planks."
			}
			tools = append(tools, fixtureTool{name: n + "_run", desc: desc})
		}
		srv := fixtureServer(t, "others", tools...)
		for _, tl := range srv.Tools {
			if zorkIn == "hints" {
				tl.Hints = []string{"zork the records", "run a zork now"}
			} else {
				tl.Hints = []string{"run the records"}
			}
		}
		return srv
	}
	splitParts := func(ix *Index) []string {
		for _, seg := range ix.segs {
			for i, d := range seg.docs {
				if d.tool.Name == "zorkplank_fetch" && (seg.deadDoc == nil || !seg.deadDoc[i]) {
					return d.extra
				}
			}
		}
		t.Fatal("zorkplank_fetch is not in the index")
		return nil
	}
	for _, tc := range []struct {
		zorkIn string
		split  bool
	}{{"hints", false}, {"description", true}} {
		whole, err := catalog.NewSnapshot(board(), others(tc.zorkIn))
		if err != nil {
			t.Fatal(err)
		}
		built := splitParts(Build(whole))
		first, err := catalog.NewSnapshot(others(tc.zorkIn))
		if err != nil {
			t.Fatal(err)
		}
		updated := splitParts(Build(first).Update(whole, "board"))
		for how, parts := range map[string][]string{"Build": built, "Update": updated} {
			if got := slices.Contains(parts, "zork"); got != tc.split {
				t.Errorf("zork in other tools' %s, %s: zorkplank split into %v, want split %v", tc.zorkIn, how, parts, tc.split)
			}
		}
	}
}
