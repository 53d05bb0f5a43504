package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	learnusage "github.com/toolsearch/toolsearch/core/usage"
	"github.com/toolsearch/toolsearch/gateway/config"
)

// runUsage shows or clears what ranking learned from use: the state
// directory's usage.json (docs/learning.md).
func runUsage(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("usage", "show|reset [-c FILE] [--state-dir DIR] [-n 20] [--json]", stderr)
	path := configFlag(fs)
	stateDir := fs.String("state-dir", "", "the state `directory` to read (default: the config's stateDir, else "+config.DefaultStateDir()+")")
	n := fs.Int("n", 20, "show the `N` strongest entries (0: all)")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, code, ok := parseFlags(fs, args, stdout)
	if !ok {
		return code
	}
	if len(pos) != 1 || (pos[0] != "show" && pos[0] != "reset") {
		fmt.Fprintln(stderr, "toolsearch usage: name one action, show or reset")
		fs.Usage()
		return exitUsage
	}
	if *n < 0 {
		fmt.Fprintf(stderr, "toolsearch usage: -n is %d; it must be 0 (all) or more\n", *n)
		return exitUsage
	}
	lc := config.DefaultLearning()
	dir := *stateDir
	if dest, exists := configPath(*path, false); exists {
		cfg, err := config.Load(dest)
		if err != nil {
			fmt.Fprintf(stderr, "toolsearch usage: %v\n", err)
			return exitUsage
		}
		lc = cfg.Gateway.Learning
		if dir == "" {
			dir = cfg.Gateway.StateDir
		}
	} else if *path != "" {
		fmt.Fprintf(stderr, "toolsearch usage: config file %s does not exist\n", *path)
		return exitUsage
	}
	if dir == "" {
		dir = config.DefaultStateDir()
	}
	file := filepath.Join(dir, learnusage.FileName)
	if pos[0] == "reset" {
		return resetUsage(file, stdout, stderr)
	}
	return showUsage(file, lc, *n, *asJSON, stdout, stderr)
}

// showUsage prints the learned entries of file, strongest first.
func showUsage(file string, lc config.Learning, n int, asJSON bool, stdout, stderr io.Writer) int {
	if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
		if asJSON {
			writeJSON(stdout, map[string]any{"file": file, "enabled": lc.Enabled, "entries": []any{}})
			return exitOK
		}
		fmt.Fprintf(stdout, "Nothing learned yet: %s does not exist.\n", file)
		if !lc.Enabled {
			fmt.Fprintln(stdout, `Learning is off: turn it on with "learning": {"enabled": true} under "toolsearch" in the config.`)
		}
		return exitOK
	}
	s, err := learnusage.Load(file, learnusage.Options{HalfLife: lc.HalfLife, MaxEntries: learnusage.MaxMaxEntries})
	if err != nil {
		fmt.Fprintf(stderr, "toolsearch usage: %v\n(toolsearch usage reset removes the file)\n", err)
		return exitUsage
	}
	entries := s.Entries(time.Now())
	total := len(entries)
	if n > 0 && len(entries) > n {
		entries = entries[:n]
	}
	if asJSON {
		type row struct {
			Tool     string    `json:"tool"`
			Terms    []string  `json:"terms"`
			Strength float64   `json:"strength"`
			Last     time.Time `json:"last"`
		}
		rows := make([]row, 0, len(entries))
		for _, e := range entries {
			rows = append(rows, row{e.Tool, e.Terms, e.Strength, e.Last.UTC()})
		}
		writeJSON(stdout, map[string]any{"file": file, "enabled": lc.Enabled, "halfLife": s.Options().HalfLife.String(),
			"total": total, "entries": rows})
		return exitOK
	}
	state := "off in the config"
	if lc.Enabled {
		state = "on"
	}
	fmt.Fprintf(stdout, "%s: %d entries (learning %s, half-life %v)\n", file, total, state, s.Options().HalfLife)
	if total == 0 {
		return exitOK
	}
	width := len("tool")
	for _, e := range entries {
		width = max(width, len(e.Tool))
	}
	fmt.Fprintf(stdout, "%8s  %-*s  %-10s  %s\n", "strength", width, "tool", "last", "query terms")
	for _, e := range entries {
		fmt.Fprintf(stdout, "%8.2f  %-*s  %-10s  %s\n", e.Strength, width, e.Tool, e.Last.Local().Format("2006-01-02"), strings.Join(e.Terms, " "))
	}
	if len(entries) < total {
		fmt.Fprintf(stdout, "(%d more; -n 0 shows all)\n", total-len(entries))
	}
	return exitOK
}

// resetUsage removes file.
func resetUsage(file string, stdout, stderr io.Writer) int {
	if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(stdout, "Nothing to clear: %s does not exist.\n", file)
		return exitOK
	}
	if err := learnusage.Remove(file); err != nil {
		fmt.Fprintf(stderr, "toolsearch usage: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(stdout, "Cleared what ranking learned from use: removed %s.\n"+
		"A gateway running now ranks with what it had learned until it restarts.\n", file)
	return exitOK
}
