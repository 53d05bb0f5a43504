package search_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/core/catalog/demo"
	"github.com/toolsearch/toolsearch/core/search"
)

var update = flag.Bool("update", false, "rewrite the golden ranking file")

// goldenQueries are queries of every form and style over the embedded demo
// catalog. Their answers are kept in testdata/golden_demo.txt, so that any
// change to ranking shows up in review as a diff of that file.
var goldenQueries = []string{
	// tasks, as a person writes them
	"open a pull request from my branch",
	"send a message to the team channel",
	"read the contents of a file",
	"run a SQL query against the database",
	"file a bug in the tracker",
	"book a meeting with the team next week",
	"take a screenshot of the web page",
	"remember that Alice prefers email",
	"refund the last payment",
	"restart the pod that keeps crashing",
	// keywords, as a model types them
	"create issue",
	"list channels",
	"write file",
	"delete calendar event",
	"kubernetes logs",
	"payments invoice",
	// other words than the tools' own
	"spin up a new deployment",
	"grab the latest commits",
	"nuke the old branch",
	"ping the on-call person",
	"dump the table rows",
	"shell into the container",
	// server mentions
	"memory graph entities",
	"codehost search code",
	"teamchat post",
	// numbers and generic words
	"take 5 screenshots",
	"get 10 rows",
	// forms other than keywords
	"select:create_issue,list_channels",
	"codehost",
	"+branch create",
	"file.*read",
	// a long instruction and request
	"Given a task about source code hosting, retrieve the tools that can open a change request between two branches and ask reviewers to look at it. I want to propose my feature branch for merging into main and get two teammates to review it.",
}

func TestGoldenRanking(t *testing.T) {
	t.Parallel()
	ix := search.Build(demo.Snapshot())
	var b strings.Builder
	b.WriteString("# Answers of the demo catalog to search_test's goldenQueries (go test ./core/search -run TestGoldenRanking -update rewrites it).\n")
	for _, q := range goldenQueries {
		res, err := ix.Search(context.Background(), search.Request{Query: q, MaxResults: 5})
		fmt.Fprintf(&b, "\n## %s\n", q)
		if err != nil {
			fmt.Fprintf(&b, "error: %v\n", err)
			continue
		}
		at := ""
		if res.TotalAtLeast {
			at = "at least "
		}
		fmt.Fprintf(&b, "form %s, %s%d matched\n", res.Form, at, res.Total)
		for i, h := range res.Hits {
			fmt.Fprintf(&b, "%d. %s %.4g\n", i+1, h.Tool.ID(), h.Score)
		}
	}
	path := filepath.Join("testdata", "golden_demo.txt")
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./core/search -run TestGoldenRanking -update to write it)", err)
	}
	if got := b.String(); got != string(want) {
		t.Errorf("the demo catalog's ranking changed; if that is intended, run go test ./core/search -run TestGoldenRanking -update and review the diff of %s\n%s", path, firstDiff(string(want), got))
	}
}

// firstDiff shows the first line where two texts differ.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\n want %q\n  got %q", i+1, a, b)
		}
	}
	return ""
}
