package upstream

import (
	"testing"
	"time"
)

// TestCooldown: the rest after each give-up doubles, from the base, up
// to an hour.
func TestCooldown(t *testing.T) {
	for _, tc := range []struct {
		base time.Duration
		n    int
		want time.Duration
	}{
		{5 * time.Minute, 0, 5 * time.Minute},
		{5 * time.Minute, 1, 10 * time.Minute},
		{5 * time.Minute, 3, 40 * time.Minute},
		{5 * time.Minute, 4, time.Hour},
		{5 * time.Minute, 50, time.Hour},
		{2 * time.Hour, 3, 2 * time.Hour},
		{0, 0, 5 * time.Minute},
		{300 * time.Millisecond, 1, 600 * time.Millisecond},
	} {
		if got := cooldown(tc.base, tc.n); got != tc.want {
			t.Errorf("cooldown(%v, %d) = %v, want %v", tc.base, tc.n, got, tc.want)
		}
	}
}
