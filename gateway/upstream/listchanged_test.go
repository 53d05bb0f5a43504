package upstream

import (
	"testing"
	"time"
)

// TestRelistDebounce: one burst of requests gives one listing, due
// relistQuiet after the last request and at most relistMaxDelay after the
// first. The times checked are those the timer was due at, which it sends
// however late a busy machine runs the test, not when the test wakes.
func TestRelistDebounce(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		gaps    []time.Duration // between requests
		atLeast time.Duration   // after the first request
	}{
		{"one request", nil, relistQuiet},
		{"a burst", []time.Duration{10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond}, 30*time.Millisecond + relistQuiet},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var d relistDebounce
			defer d.stop()
			start := time.Now()
			last := start
			due := d.request(start)
			for _, gap := range c.gaps {
				time.Sleep(gap)
				last = time.Now()
				due = d.request(last)
			}
			at := dueAt(t, due)
			if el := at.Sub(start); el < c.atLeast {
				t.Errorf("due %v after the first request, want at least %v", el, c.atLeast)
			}
			if el := at.Sub(last); el > relistQuiet+500*time.Millisecond {
				t.Errorf("due %v after the last request, want about %v", el, relistQuiet)
			}
		})
	}
	t.Run("a storm without pause", func(t *testing.T) {
		t.Parallel()
		var d relistDebounce
		defer d.stop()
		start := time.Now()
		// Requests as if relistQuiet/2 apart, for twice relistMaxDelay.
		var due <-chan time.Time
		for at := time.Duration(0); at < 2*relistMaxDelay; at += relistQuiet / 2 {
			due = d.request(start.Add(at))
		}
		ended := time.Now()
		// The last request was made "at" 2*relistMaxDelay, past the
		// bound: the listing is due at once.
		if el := dueAt(t, due).Sub(ended); el > 500*time.Millisecond {
			t.Errorf("a listing held back past relistMaxDelay: due %v after the storm", el)
		}
		d.fired()
		now := time.Now()
		if el := dueAt(t, d.request(now)).Sub(now); el < relistQuiet/2 {
			t.Errorf("a new burst after a listing was due at once (after %v)", el)
		}
	})
}

// dueAt waits for a debounce timer and returns the time it was due at.
func dueAt(t *testing.T, due <-chan time.Time) time.Time {
	t.Helper()
	select {
	case at := <-due:
		return at
	case <-time.After(time.Minute):
		t.Fatal("the listing never came due")
		return time.Time{}
	}
}
