package redact

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	t.Parallel()
	r := New("sk-live-abc", `pa"ss w/rd`, "", "sk-live-abcdef")
	tests := []struct{ in, want string }{
		{"key sk-live-abcdef here", "key [REDACTED] here"},
		{"short sk-live-abc.", "short [REDACTED]."},
		{`quoted "pa\"ss w/rd"`, `quoted "[REDACTED]"`},
		{"url ?p=" + url.QueryEscape(`pa"ss w/rd`), "url ?p=[REDACTED]"},
		{"nothing secret", "nothing secret"},
		{"", ""},
	}
	for _, tc := range tests {
		if got := r.String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	var none *Redactor
	if none.String("sk-live-abc") != "sk-live-abc" || New().String("x") != "x" {
		t.Error("an empty redactor changed text")
	}
}

func TestError(t *testing.T) {
	t.Parallel()
	r := New("hunter22")
	base := fmt.Errorf("open %s: %w", "hunter22", fs.ErrNotExist)
	err := r.Error(base)
	if err.Error() != "open [REDACTED]: file does not exist" || !errors.Is(err, fs.ErrNotExist) || !Redacted(err) {
		t.Errorf("Error = %v (is ErrNotExist %v)", err, errors.Is(err, fs.ErrNotExist))
	}
	plain := errors.New("fine")
	if r.Error(plain) != plain || r.Error(nil) != nil || Redacted(plain) {
		t.Error("an error without secrets was changed")
	}
}

func TestWriterUnderSlog(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	r := New("tok en\"42", "ghp_0123456789")
	log := slog.New(slog.NewTextHandler(r.Writer(&buf), nil))
	log.Warn("upstream failed", "err", errors.New(`stderr: token is "tok en"42" and ghp_0123456789`), "plain", "ghp_0123456789")
	out := buf.String()
	if strings.Contains(out, "ghp_0123456789") || strings.Contains(out, "tok en") || strings.Count(out, Mark) != 3 {
		t.Errorf("log line not redacted: %s", out)
	}
}
