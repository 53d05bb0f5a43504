package main

// The variables of client configs, as import rewrites them. VS Code (and
// Cursor, which copied it) write ${workspaceFolder}, ${userHome},
// ${env:NAME}, ${input:ID} and other editor variables in server entries;
// toolsearch expands only environment variables (${NAME},
// ${NAME:-default}), so import rewrites each into what the gateway reads:
//
//	${workspaceFolder}          the folder the file belongs to (the parent of .vscode/)
//	${workspaceFolderBasename}  its name
//	${userHome}                 the home folder
//	${pathSeparator}, ${/}      the path separator
//	${env:NAME}                 ${NAME}, expanded by the gateway when it starts the server
//	${NAME}, ${NAME:-default}   kept
//
// An entry is left out, with a message that names it and the variable,
// when it needs what only the editor knows: ${input:ID} (a value VS Code
// prompts the user for; its text is never copied), ${workspaceFolder} in
// a user-wide file (no workspace), ${config:…}, ${command:…} and the
// editor's other variables (${file}, ${cwd}, ${selectedText}...).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolsearch/toolsearch/gateway/config"
)

// editorVariables are VS Code's predefined variables that name editor
// state: they mean nothing to a gateway.
var editorVariables = map[string]bool{
	"file": true, "fileWorkspaceFolder": true, "fileWorkspaceFolderBasename": true, "relativeFile": true, "relativeFileDirname": true,
	"fileBasename": true, "fileBasenameNoExtension": true, "fileExtname": true, "fileDirname": true, "fileDirnameBasename": true,
	"cwd": true, "lineNumber": true, "columnNumber": true, "selectedText": true, "execPath": true, "defaultBuildTask": true,
	"extensionInstallFolder": true,
}

// importEntry rewrites the variables of one server entry (every string
// value, at any depth) for the gateway's config; it returns the entry
// unchanged when it has none to rewrite, and an error naming the variable
// when the entry cannot be imported.
func importEntry(name string, e clientEntry) (json.RawMessage, error) {
	if !bytes.Contains(e.raw, []byte("${")) {
		return e.raw, nil
	}
	dec := json.NewDecoder(bytes.NewReader(e.raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	out, err := rewriteValue(v, e)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return bytes.TrimSpace(b.Bytes()), nil
}

func rewriteValue(v any, e clientEntry) (any, error) {
	switch x := v.(type) {
	case string:
		return rewriteVars(x, e)
	case []any:
		for i := range x {
			r, err := rewriteValue(x[i], e)
			if err != nil {
				return nil, err
			}
			x[i] = r
		}
	case map[string]any:
		for k := range x {
			if strings.Contains(k, "${") {
				return nil, fmt.Errorf("the key %q holds a variable, and variables are expanded in values only", k)
			}
			r, err := rewriteValue(x[k], e)
			if err != nil {
				return nil, err
			}
			x[k] = r
		}
	}
	return v, nil
}

// rewriteVars rewrites the ${…} references of one string.
func rewriteVars(s string, e clientEntry) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		ref := s[i+2 : i+j]
		s = s[i+j+1:]
		r, err := rewriteRef(ref, e)
		if err != nil {
			return "", err
		}
		b.WriteString(r)
	}
}

// rewriteRef is what one reference ${ref} becomes.
func rewriteRef(ref string, e clientEntry) (string, error) {
	kind, arg, scoped := strings.Cut(ref, ":")
	switch {
	case ref == "workspaceFolder" || ref == "workspaceRoot" || ref == "workspaceFolderBasename":
		if e.workspace == "" {
			return "", fmt.Errorf("${%s} names the VS Code workspace, and this file belongs to none (it is user-wide): "+
				"write the folder's path in the entry instead", ref)
		}
		if ref == "workspaceFolderBasename" {
			return filepath.Base(e.workspace), nil
		}
		return e.workspace, nil
	case ref == "userHome":
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("${userHome}: %w", err)
		}
		return home, nil
	case ref == "pathSeparator" || ref == "/":
		return string(filepath.Separator), nil
	case scoped && kind == "env":
		if !validEnvName(arg) {
			return "", fmt.Errorf("${env:%s}: %q is not an environment variable name", arg, arg)
		}
		return "${" + arg + "}", nil
	case scoped && kind == "input":
		what := ""
		if d := strings.TrimSpace(e.inputs[arg]); d != "" {
			what = fmt.Sprintf(" (%q)", d)
		}
		return "", fmt.Errorf("it needs ${input:%s}%s, a value VS Code prompts for, which toolsearch cannot ask: "+
			"put the value in an environment variable, write ${NAME} for it in the entry, and import again "+
			"(the value is never copied into toolsearch's config)", arg, what)
	case scoped && (kind == "config" || kind == "command"):
		return "", fmt.Errorf("${%s} is a VS Code %s variable, which only the editor can resolve: write its value in the entry instead", ref, kind)
	case editorVariables[ref]:
		return "", fmt.Errorf("${%s} is a VS Code editor variable, which means nothing outside the editor: write its value in the entry instead", ref)
	}
	// ${NAME} and ${NAME:-default}: the gateway's own syntax, kept.
	return "${" + ref + "}", nil
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r == '_' || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z') || (i > 0 && r >= '0' && r <= '9') {
			continue
		}
		return false
	}
	return true
}

// entryRunsSelf reports whether an imported entry runs self's serve
// (self.go), and the file its command resolves to.
func entryRunsSelf(self string, raw json.RawMessage) (string, bool) {
	var e struct {
		Type    string   `json:"type"`
		URL     string   `json:"url"`
		Command string   `json:"command"`
		Args    []string `json:"args"`
		Cwd     string   `json:"cwd"`
	}
	if json.Unmarshal(raw, &e) != nil || e.URL != "" || (e.Type != "" && e.Type != "stdio") {
		return "", false
	}
	exp := func(s string) string { out, _ := config.Expand(s, os.LookupEnv); return out }
	args := make([]string, len(e.Args))
	for i, a := range e.Args {
		args[i] = exp(a)
	}
	ok, p := runsSelf(self, exp(e.Command), args, exp(e.Cwd), os.Getenv("PATH"))
	return p, ok
}
