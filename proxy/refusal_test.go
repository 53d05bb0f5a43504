package proxy

import (
	"net/http"
	"testing"

	"github.com/toolsearch/toolsearch/internal/refusaltest"
)

// refusalTable loads the error texts of real endpoints (each cited) that
// package messages, the anthropic library and the proxy are all tested
// with.
func refusalTable(t testing.TB) refusaltest.Table {
	t.Helper()
	table, err := refusaltest.Load()
	if err != nil {
		t.Fatal(err)
	}
	return table
}

func tableHeader(table refusaltest.Table) http.Header {
	h := http.Header{}
	for _, b := range table.Betas {
		h.Add("anthropic-beta", b)
	}
	return h
}

// TestReadRefusal reads the table's error texts against the request they
// answered, as the proxy does: want is the level the error makes the proxy
// drop ("inline", "fold", "emulate"), "client" when it names something of
// the request no level drops (the client's to read), and "nothing" when it
// names nothing the request used (a step down, blind).
func TestReadRefusal(t *testing.T) {
	t.Parallel()
	table := refusalTable(t)
	for _, tc := range table.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			r := readRefusal([]byte(tc.Body), []byte(table.Request), tableHeader(table))
			got := map[drop]string{keep: "client", dropInline: "inline", dropFold: "fold", dropEmulate: "emulate"}[r.drop()]
			if !r.Names {
				got = "nothing"
			}
			if got != tc.Want {
				t.Fatalf("read as %q (named %s), want %q", got, r.Named(), tc.Want)
			}
		})
	}
}

// TestRefusalBelow: a step down after a refusal that names nothing goes
// to the richest level under the current one that changes the request.
func TestRefusalBelow(t *testing.T) {
	t.Parallel()
	table := refusalTable(t)
	nothing := []byte(`{"message":"Request body format invalid"}`)
	tests := []struct {
		name, sent string
		header     http.Header
		from       level
		want       level
		wantOK     bool
	}{
		{"claude code request, as sent: fold", table.Request, tableHeader(table), level{}, level{fold: true}, true},
		{"claude code request, folded: emulate", table.Request, tableHeader(table), level{fold: true}, level{fold: true, emulate: true}, true},
		{"claude code request, emulated: nothing lower", table.Request, tableHeader(table), level{emulate: true}, level{emulate: true}, false},
		{"inline beta: by reference", `{"model":"m","messages":[]}`, http.Header{"Anthropic-Beta": {"inline-tools-2026-09-15"}}, level{}, level{noInline: true}, true},
		{"plain request: nothing to drop", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`, http.Header{}, level{}, level{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := readRefusal(nothing, []byte(tt.sent), tt.header).below(tt.from)
			if got != tt.want || ok != tt.wantOK {
				t.Fatalf("below(%s) = %s, %v; want %s, %v", tt.from, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// FuzzReadRefusal: no upstream body makes the proxy's reading panic or
// step below emulation, and a level it drops is one the request uses.
func FuzzReadRefusal(f *testing.F) {
	table := refusalTable(f)
	for _, tc := range table.Cases {
		f.Add([]byte(tc.Body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := readRefusal(body, []byte(table.Request), tableHeader(table))
		if r.drop() > dropEmulate || (r.drop() != keep && !r.Names) {
			t.Fatalf("inconsistent refusal %+v", r)
		}
		if _, ok := r.below(level{emulate: true}); ok {
			t.Fatal("a level below emulate")
		}
	})
}
