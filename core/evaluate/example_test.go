package evaluate_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/toolsearch/toolsearch/core/catalog/demo"
	"github.com/toolsearch/toolsearch/core/evaluate"
	"github.com/toolsearch/toolsearch/core/search"
)

// A query set with known answers, scored against the embedded demo
// catalog: the figures toolsearch eval prints, and the queries not
// answered first. A query the engine refuses counts, and scores 0.
func ExampleRun() {
	queries, err := evaluate.LoadQueries(strings.NewReader(`
{"id": "q1", "query": "open a pull request", "gold": ["codehost/create_pull_request"], "style": "task"}
{"id": "q2", "query": "list the pull requests waiting for review", "gold": ["codehost/list_pull_requests"], "style": "task"}
{"id": "q3", "query": "select:", "gold": ["codehost/create_pull_request"], "style": "exact"}
`))
	if err != nil {
		panic(err)
	}
	rep, err := evaluate.Run(context.Background(), search.Build(demo.Snapshot()), queries, 5)
	if err != nil {
		panic(err)
	}
	fmt.Printf("n %d, errors %d, hit@1 %.2f, hit@5 %.2f, MRR %.2f\n", rep.N, rep.Errors, rep.HitAt1, rep.HitAtK, rep.MRR)
	fmt.Printf("task: n %d, hit@1 %.2f\n", rep.ByStyle["task"].N, rep.ByStyle["task"].HitAt1)
	for _, m := range rep.Misses {
		fmt.Printf("miss %s (%s): rank %d, error %q\n", m.ID, m.Style, m.Rank, m.Err)
	}
	// Output:
	// n 3, errors 1, hit@1 0.33, hit@5 0.67, MRR 0.50
	// task: n 2, hit@1 0.50
	// miss q2 (task): rank 2, error ""
	// miss q3 (exact): rank 0, error "bad query: select: names no tool (write select:name1,name2)"
}

// A part of a query set is fixed by the queries' IDs, so one half can be
// tuned on and the other reported: the two halves hold every query once.
func ExamplePart() {
	first, err := evaluate.ParsePart("1/2")
	if err != nil {
		panic(err)
	}
	second, _ := evaluate.ParsePart("2/2")
	qs := []evaluate.Query{{ID: "q1"}, {ID: "q2"}, {ID: "q3"}, {ID: "q4"}}
	fmt.Println(first, len(first.Select(qs))+len(second.Select(qs)) == len(qs))
	_, err = evaluate.ParsePart("3/2")
	fmt.Println(err)
	// Output:
	// 1/2 true
	// part "3/2": K is 3; it must be between 1 and N (2)
}
