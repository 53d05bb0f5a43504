package enrich_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/hints"
	"github.com/toolsearch/toolsearch/enrich"
)

// cannedModel is a Provider that answers as a model is asked to: for each
// tool of the request, four phrasings, as JSON. Here it knows two tools'
// hints by heart; enrich.NewAnthropic and enrich.NewOpenAI ask real APIs,
// and any other model can be a Provider.
type cannedModel struct{ asked atomic.Int32 } // called concurrently

func (m *cannedModel) Complete(ctx context.Context, req enrich.Request) (enrich.Reply, error) {
	m.asked.Add(1)
	known := map[string][]string{
		"create_issue": {"bug report", "file a bug", "log a ticket for my repo", "get the login crash tracked"},
		"post_message": {"chat message", "tell the team", "ping the channel", "let everyone know the deploy is done"},
	}
	type tool struct {
		Name  string   `json:"name"`
		Hints []string `json:"hints"`
	}
	var out struct {
		Tools []tool `json:"tools"`
	}
	for _, name := range []string{"create_issue", "post_message"} {
		if strings.Contains(req.Prompt, `"`+name+`"`) {
			out.Tools = append(out.Tools, tool{name, known[name]})
		}
	}
	b, _ := json.Marshal(out)
	return enrich.Reply{Text: string(b)}, nil
}

// A plan says what a run will send and cost; a run writes the hints that
// pass the checks to the hints file, and a second run sends nothing for
// definitions that already have them.
func ExampleRun() {
	tool := func(name, desc string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"name": name, "description": desc, "inputSchema": map[string]any{"type": "object"}})
		return b
	}
	tracker, _ := catalog.NewServer("tracker", []json.RawMessage{tool("create_issue", "Create an issue.")}, nil, false)
	chat, _ := catalog.NewServer("chat", []json.RawMessage{tool("post_message", "Post a message to a channel.")}, nil, false)
	snap, _ := catalog.NewSnapshot(tracker, chat)

	dir, _ := os.MkdirTemp("", "hints")
	defer os.RemoveAll(dir)
	cache, err := hints.OpenCache(filepath.Join(dir, "hints.jsonl"))
	if err != nil {
		panic(err)
	}
	model := &cannedModel{}
	for run := 1; run <= 2; run++ {
		plan, err := enrich.NewPlan(snap.Tools(), cache, enrich.Options{})
		if err != nil {
			panic(err)
		}
		fmt.Printf("run %d: %d tools, %d current, %d to send in %d requests\n", run, plan.Tools, plan.Current, plan.Send, len(plan.Batches))
		res, err := enrich.Run(context.Background(), model, plan, cache, enrich.Options{})
		if err != nil {
			panic(err)
		}
		fmt.Printf("  written %d, rejected %d\n", res.Written, res.Rejected)
	}
	fmt.Println("model asked", model.asked.Load(), "times")
	e, _ := cache.Set().Get("tracker/create_issue")
	fmt.Println(e.Hints)
	// Output:
	// run 1: 2 tools, 0 current, 2 to send in 2 requests
	//   written 2, rejected 0
	// run 2: 2 tools, 2 current, 0 to send in 0 requests
	//   written 0, rejected 0
	// model asked 2 times
	// [bug report file a bug log a ticket for my repo get the login crash tracked]
}

// The dry run's price comes from the published price table.
func ExamplePriceOf() {
	p, ok := enrich.PriceOf("claude-haiku-4-5")
	fmt.Println(ok, p.Vendor, p.Input > 0 && p.Output > 0)
	_, ok = enrich.PriceOf("llama3.1")
	fmt.Println(ok)
	// Output:
	// true anthropic true
	// false
}
