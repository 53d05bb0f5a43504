package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/toolsearch/toolsearch/gateway"
)

// progressEvery is how often watchStarts looks at the servers' states.
const progressEvery = 100 * time.Millisecond

// watchStarts reports on w how each server of a started gateway comes up,
// one line a step: "NAME: starting…", then "NAME: N tools in 1.2s",
// "NAME: N tools from the cache saved 5m ago" or "NAME: failed: reason".
// It returns once every server has settled, or when wait has passed: each
// server still starting then gets "NAME: gave up after 10s: …" and is
// returned, with that reason, in gaveUp. The lines are plain (no cursor
// movement), so they read the same in a terminal and in a log.
func watchStarts(ctx context.Context, g *gateway.Gateway, wait time.Duration, w io.Writer) (gaveUp map[string]string) {
	start := time.Now()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	announced := map[string]bool{} // "starting…" said
	settled := map[string]bool{}
	for {
		var pending []gateway.Status
		for _, s := range g.Statuses() {
			if settled[s.Key] {
				continue
			}
			if line, ok := settledLine(s, time.Since(start), time.Now()); ok {
				settled[s.Key] = true
				fmt.Fprintf(w, "%s: %s\n", s.Key, line)
				continue
			}
			if !announced[s.Key] {
				announced[s.Key] = true
				fmt.Fprintf(w, "%s: starting…\n", s.Key)
			}
			pending = append(pending, s)
		}
		if len(pending) == 0 {
			return nil
		}
		select {
		case <-tick.C:
			continue
		case <-deadline.C:
		case <-ctx.Done():
		}
		gaveUp = map[string]string{}
		for _, s := range pending {
			why := fmt.Sprintf("still %s after %v", s.State, wait.Round(time.Millisecond))
			if ctx.Err() != nil {
				why = "interrupted while " + string(s.State)
			}
			if s.Error != "" {
				why += "; last error: " + oneLine(s.Error, 300)
			}
			gaveUp[s.Key] = why
			fmt.Fprintf(w, "%s: gave up: %s; going on without it\n", s.Key, why)
		}
		return gaveUp
	}
}

// settledLine describes a server that has settled, or says it has not. A
// server whose first start failed has settled even while the gateway
// tries it again (restarting, with the error of the last start). took is
// the time since the servers were started, now the time of the status.
func settledLine(s gateway.Status, took time.Duration, now time.Time) (string, bool) {
	switch {
	case s.State == gateway.StateRestarting && s.Error == "":
		return "", false
	case s.State == gateway.StateReady:
		return fmt.Sprintf("%s in %v", plural(s.Tools, "tool"), took.Round(100*time.Millisecond)), true
	case s.State == gateway.StateIdle:
		line := plural(s.Tools, "tool") + " from the cache"
		if !s.CachedAt.IsZero() {
			line += fmt.Sprintf(" saved %v ago", now.Sub(s.CachedAt).Round(time.Second))
		}
		return line, true
	case s.State == gateway.StateFailed, s.State == gateway.StateStopped, s.State == gateway.StateRestarting:
		why := oneLine(s.Error, 300)
		if why == "" {
			why = string(s.State)
		}
		return "failed: " + why, true
	}
	return "", false
}

// plural is "1 tool" or "N tools".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// oneLine is s on one line, cut to at most max runes, with control
// characters shown as "?": a server's error carries its stderr, which must
// not move the cursor or retitle the terminal.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return '?'
		}
		return r
	}, s)
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}
