// Package redact removes secrets from text before it is shown: log lines,
// error messages, status output. It hides two kinds:
//
//   - known values (tokens, keys, passwords from a configuration), wherever
//     they appear as written and in the escaped forms that logs and errors
//     give them (Go and JSON string quoting, URL query escaping), so that a
//     value quoted by a log handler or embedded in a URL is caught too;
//   - secrets recognised by their shape, which no configuration named: a
//     provider's key format (sk-…, ghp_…, xoxb-…, AKIA…), a bearer token, a
//     password in a URL, the value after a key named like a secret
//     (api_key=…, "password": "…"). See shapes.
package redact

import (
	"encoding/json"
	"errors"
	"io"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// Mark replaces each secret.
const Mark = "[REDACTED]"

// Redactor replaces a fixed set of secret values and the secret shapes.
// The zero value and nil replace nothing.
type Redactor struct {
	r      *strings.Replacer
	shapes bool
}

// New returns a Redactor for the given secrets and every secret shape.
// Empty values are ignored.
func New(secrets ...string) *Redactor {
	seen := map[string]bool{}
	var forms []string
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			forms = append(forms, s)
		}
	}
	for _, s := range secrets {
		if s == "" {
			continue
		}
		add(s)
		if q := strconv.Quote(s); len(q) > 2 {
			add(q[1 : len(q)-1])
		}
		if b, err := json.Marshal(s); err == nil && len(b) > 2 {
			add(string(b[1 : len(b)-1]))
		}
		add(url.QueryEscape(s))
		add(url.PathEscape(s))
	}
	if len(forms) == 0 {
		return &Redactor{shapes: true}
	}
	// Longest first: where two secrets overlap, the longer one wins.
	sort.SliceStable(forms, func(i, j int) bool { return len(forms[i]) > len(forms[j]) })
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, Mark)
	}
	return &Redactor{r: strings.NewReplacer(pairs...), shapes: true}
}

// String returns s with every secret replaced by Mark: the known values
// first, then the shapes (a shape's telling prefix, such as "Bearer ",
// stays).
func (r *Redactor) String(s string) string {
	if r == nil || s == "" {
		return s
	}
	if r.r != nil {
		s = r.r.Replace(s)
	}
	if r.shapes {
		s = redactShapes(s)
	}
	return s
}

// Error returns err with its message redacted. The result wraps err, so
// errors.Is and errors.As still see the original; only its text changes.
// It returns err itself when nothing needs replacing.
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	red := r.String(msg)
	if red == msg {
		return err
	}
	return &redactedError{msg: red, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// Redacted reports whether err, or an error it wraps, had its message
// redacted by a Redactor.
func Redacted(err error) bool {
	var re *redactedError
	return errors.As(err, &re)
}

// Writer returns a writer that redacts each Write before passing it on. A
// secret split across two writes is not caught: use it where every write
// is a whole line (a log handler's output).
func (r *Redactor) Writer(w io.Writer) io.Writer {
	if r == nil || (r.r == nil && !r.shapes) {
		return w
	}
	return &writer{r: r, w: w}
}

type writer struct {
	r *Redactor
	w io.Writer
}

func (w *writer) Write(p []byte) (int, error) {
	if _, err := io.WriteString(w.w, w.r.String(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
