package main

// Finding the config entries that would run this toolsearch's own serve:
// a gateway that lists itself among its servers would start itself, which
// would start itself again, without end. import leaves such entries out
// and serve refuses a config that has one.
//
// What is detected: an entry whose command is this binary and whose first
// argument is serve, whatever the command is called — a bare name found
// on PATH, an absolute path, a path relative to the entry's cwd (or to the
// gateway's folder), a symbolic link, a hard link, or a copy of the binary
// (same size and bytes). What is not: a command that starts toolsearch
// through something else — a shell (sh -c "toolsearch serve"), env, npx,
// a container, a script — since what those run is known only when they
// run; nor a different build of toolsearch.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/toolsearch/toolsearch/gateway/config"
)

// selfExecutable is the running binary, symbolic links resolved.
func selfExecutable() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(exe)
}

// runsSelf reports whether a stdio entry (command, args, cwd) runs the
// serve of the binary self, and the file its command resolves to.
// pathEnv is the PATH a bare command name is looked up in.
func runsSelf(self, command string, args []string, cwd, pathEnv string) (bool, string) {
	if self == "" || strings.TrimSpace(command) == "" || len(args) == 0 || args[0] != "serve" {
		return false, ""
	}
	p, err := resolveCommand(command, cwd, pathEnv)
	if err != nil {
		return false, ""
	}
	same, err := sameExecutable(p, self)
	return err == nil && same, p
}

// resolveCommand finds the file a command names, as starting it would: a
// name without a separator on PATH, a relative path from cwd (or the
// current folder), symbolic links resolved.
func resolveCommand(command, cwd, pathEnv string) (string, error) {
	command = config.ExpandHome(command)
	var p string
	switch {
	case !strings.ContainsRune(command, '/') && !strings.ContainsRune(command, filepath.Separator):
		found, err := lookPathIn(command, pathEnv)
		if err != nil {
			return "", err
		}
		p = found
	case filepath.IsAbs(command):
		p = command
	default:
		base := cwd
		if base == "" {
			var err error
			if base, err = os.Getwd(); err != nil {
				return "", err
			}
		}
		p = filepath.Join(config.ExpandHome(base), command)
	}
	return filepath.EvalSymlinks(p)
}

// lookPathIn is exec.LookPath over the folders of pathEnv.
func lookPathIn(name, pathEnv string) (string, error) {
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", name, exec.ErrNotFound)
}

// sameExecutable reports whether a and b are the same file, or copies of
// it: equal sizes and bytes.
func sameExecutable(a, b string) (bool, error) {
	fa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	if os.SameFile(fa, fb) {
		return true, nil
	}
	if !fa.Mode().IsRegular() || !fb.Mode().IsRegular() || fa.Size() != fb.Size() {
		return false, nil
	}
	return sameBytes(a, b)
}

func sameBytes(a, b string) (bool, error) {
	ra, err := os.Open(a)
	if err != nil {
		return false, err
	}
	defer ra.Close()
	rb, err := os.Open(b)
	if err != nil {
		return false, err
	}
	defer rb.Close()
	ba, bb := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		na, ea := io.ReadFull(ra, ba)
		nb, eb := io.ReadFull(rb, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false, nil
		}
		if errors.Is(ea, io.EOF) || errors.Is(ea, io.ErrUnexpectedEOF) {
			return errors.Is(eb, io.EOF) || errors.Is(eb, io.ErrUnexpectedEOF), nil
		}
		if ea != nil {
			return false, ea
		}
		if eb != nil {
			return false, eb
		}
	}
}

// selfEntries returns the enabled stdio servers of cfg that run this
// binary's serve, each with the file its command resolves to.
func selfEntries(cfg *config.Config) []string {
	self, err := selfExecutable()
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range cfg.Enabled() {
		if s.Transport != config.TransportStdio {
			continue
		}
		// The gateway starts a command as exec.Command does: a bare name
		// from its own PATH, a relative path from the entry's cwd.
		if ok, p := runsSelf(self, s.Command, s.Args, s.Cwd, os.Getenv("PATH")); ok {
			out = append(out, fmt.Sprintf("%q (its command, %s, is this binary)", s.Key, p))
		}
	}
	return out
}
