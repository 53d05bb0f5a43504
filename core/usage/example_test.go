package usage_test

import (
	"fmt"
	"time"

	"github.com/toolsearch/toolsearch/core/usage"
)

// A store records which tool was called after a query, by the query's
// analysed terms, and answers later queries with each tool's learned
// share: one call after the same query gives 1/2, three give 3/4, and a
// call counts half after every half-life.
func ExampleStore_Shares() {
	st, err := usage.New(usage.Options{HalfLife: 24 * time.Hour})
	if err != nil {
		panic(err)
	}
	t0 := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	for range 3 {
		if err := st.Record([]string{"open", "ticket"}, "jira/create_issue", t0); err != nil {
			panic(err)
		}
	}
	_ = st.Record([]string{"open", "ticket"}, "github/create_issue", t0)

	show := func(terms []string, at time.Time) {
		shares := st.Shares(terms, nil, at)
		fmt.Printf("%v: jira %.3f, github %.3f\n", terms, shares["jira/create_issue"], shares["github/create_issue"])
	}
	show([]string{"open", "ticket"}, t0)
	show([]string{"open", "ticket"}, t0.Add(24*time.Hour)) // a half-life later
	show([]string{"ticket", "urgent"}, t0)                 // a query only partly alike
	fmt.Println(st.Shares([]string{"weather"}, nil, t0))   // nothing alike: no share
	// Output:
	// [open ticket]: jira 0.750, github 0.500
	// [open ticket]: jira 0.600, github 0.333
	// [ticket urgent]: jira 0.500, github 0.250
	// map[]
}

// Entries lists what was learned, strongest first; Reset forgets it.
func ExampleStore_Entries() {
	st, _ := usage.New(usage.Options{})
	at := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	_ = st.Record([]string{"post", "channel"}, "chat/post_message", at)
	_ = st.Record([]string{"post", "channel"}, "chat/post_message", at)
	_ = st.Record([]string{"error", "recent"}, "sentry/list_errors", at)
	for _, e := range st.Entries(at) {
		fmt.Printf("%v → %s (%.0f)\n", e.Terms, e.Tool, e.Strength)
	}
	st.Reset()
	fmt.Println(st.Len(), "entries after reset")
	// Output:
	// [channel post] → chat/post_message (2)
	// [error recent] → sentry/list_errors (1)
	// 0 entries after reset
}
