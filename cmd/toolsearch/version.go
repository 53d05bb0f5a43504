package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// stampedVersion is the version a release build sets with
// -ldflags "-X main.stampedVersion=v1.2.3" (the Makefile's, from git
// describe); empty in other builds.
var stampedVersion string

// buildVersion is the version the binary reports to clients, to upstream
// servers and with --version: the stamped version of a release build, else
// the module version when it was built by `go install …@vX`, else "devel"
// with the commit it was built from (and "-dirty" when the tree had
// changes), else "devel".
func buildVersion() string {
	if stampedVersion != "" {
		return stampedVersion
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return versionOf(info)
}

// versionOf is buildVersion for given build info (tests).
func versionOf(info *debug.BuildInfo) string {
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	v := "devel+" + rev
	if dirty {
		v += "-dirty"
	}
	return v
}

// runVersion prints the version, with the Go release and platform it was
// built with and, when known, the commit and its time.
func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("version", "", stderr)
	pos, code, ok := parseFlags(fs, args, stdout)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "toolsearch version: takes no arguments, got %q\n", pos[0])
		return exitUsage
	}
	fmt.Fprintf(stdout, "toolsearch %s (%s, %s/%s", buildVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.time" {
				fmt.Fprintf(stdout, ", committed %s", s.Value)
			}
		}
	}
	fmt.Fprintln(stdout, ")")
	return exitOK
}
