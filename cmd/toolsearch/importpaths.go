package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// absolutePaths makes the relative paths of a stdio entry absolute against
// the folder of the file it came from, since a client starts a project's
// servers there and the gateway starts them wherever it runs: the command
// when it names a file ("./bin/server"), cwd, and each argument that is a
// path (".", "..", "./x", "../x", a --flag=./x value, or a relative path to
// a file that exists there). It returns the entry and one note per path
// rewritten; an entry of a user-wide file (no folder to resolve against)
// with a relative path is refused.
func absolutePaths(raw json.RawMessage, workspace string) (json.RawMessage, []string, error) {
	var e map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&e); err != nil || e == nil {
		return raw, nil, nil // not an object: config.Parse says what is wrong
	}
	var notes, relative []string
	fix := func(field, p string, sure bool) string {
		if p == "" || filepath.IsAbs(p) || strings.HasPrefix(p, "~") || strings.Contains(p, "${") || strings.Contains(p, "://") {
			return p
		}
		if !sure && !(workspace != "" && exists(filepath.Join(workspace, p))) {
			return p
		}
		if workspace == "" {
			relative = append(relative, fmt.Sprintf("%s %q", field, p))
			return p
		}
		abs := filepath.Join(workspace, p)
		notes = append(notes, fmt.Sprintf("%s %q is relative to %s: written as %q", field, p, workspace, abs))
		return abs
	}
	changed := false
	if cmd, ok := e["command"].(string); ok && strings.ContainsAny(cmd, `/\`) {
		if c := fix("command", cmd, true); c != cmd {
			e["command"], changed = c, true
		}
	}
	if cwd, ok := e["cwd"].(string); ok {
		if c := fix("cwd", cwd, true); c != cwd {
			e["cwd"], changed = c, true
		}
	}
	if args, ok := e["args"].([]any); ok && e["command"] != nil {
		for i, a := range args {
			s, ok := a.(string)
			if !ok {
				continue
			}
			field := fmt.Sprintf("args[%d]", i)
			var out string
			if flag, val, ok := strings.Cut(s, "="); ok && strings.HasPrefix(flag, "-") {
				out = flag + "=" + fix(field, val, pathLike(val))
			} else if !strings.HasPrefix(s, "-") {
				out = fix(field, s, pathLike(s))
			} else {
				continue
			}
			if out != s {
				args[i], changed = out, true
			}
		}
	}
	if len(relative) > 0 {
		return nil, nil, fmt.Errorf("%s: a relative path, and this file belongs to no project folder to resolve it against "+
			"(the gateway would resolve it against the folder it runs in); write the path absolute in the file, or add the server with toolsearch add",
			strings.Join(relative, ", "))
	}
	if !changed {
		return raw, nil, nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return nil, nil, err
	}
	return bytes.TrimSpace(b.Bytes()), notes, nil
}

// pathLike reports whether s is written as a relative path, whatever
// exists: ".", "..", or starting with "./" or "../".
func pathLike(s string) bool {
	s = filepath.ToSlash(s)
	return s == "." || s == ".." || strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../")
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
