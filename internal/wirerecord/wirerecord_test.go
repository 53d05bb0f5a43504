package wirerecord

import (
	"fmt"
	"slices"
	"sync"
	"testing"
)

func TestRecorder(t *testing.T) {
	t.Parallel()
	var r Recorder
	if len(r.Requests()) != 0 || len(r.Rejections()) != 0 {
		t.Fatal("a new recorder is not empty")
	}
	var wg sync.WaitGroup
	seen := make([]int, 50)
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen[i] = r.Record([]byte(fmt.Sprint(i)))
			if i%5 == 0 {
				r.Reject(fmt.Sprint("refused ", i))
			}
		}()
	}
	wg.Wait()
	slices.Sort(seen)
	for i, n := range seen {
		if n != i+1 {
			t.Fatalf("numbers %v, want 1..50 each once", seen)
		}
	}
	if got := len(r.Requests()); got != 50 {
		t.Fatalf("%d requests kept, want 50", got)
	}
	if got := len(r.Rejections()); got != 10 {
		t.Fatalf("%d rejections kept, want 10", got)
	}
	// The returned slices are copies.
	reqs := r.Requests()
	reqs[0] = nil
	if r.Requests()[0] == nil {
		t.Fatal("Requests returned the recorder's own slice")
	}
}
