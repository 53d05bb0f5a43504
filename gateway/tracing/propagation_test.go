package tracing

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

func TestParseTraceparent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		in      string
		ok      bool
		sampled bool
		wantErr string // a word of the error
	}{
		{name: "sampled", in: goodParent, ok: true, sampled: true},
		{name: "unsampled", in: "00-" + traceHex + "-" + spanHex + "-00", ok: true},
		{name: "unknown flags kept out", in: "00-" + traceHex + "-" + spanHex + "-fe", ok: true},
		{name: "unknown flags and sampled", in: "00-" + traceHex + "-" + spanHex + "-09", ok: true, sampled: true},
		{name: "later version", in: "cc-" + traceHex + "-" + spanHex + "-01", ok: true, sampled: true},
		{name: "later version with more fields", in: "cc-" + traceHex + "-" + spanHex + "-01-what-comes-next", ok: true, sampled: true},
		{name: "later version, no dash after the flags", in: "cc-" + traceHex + "-" + spanHex + "-01x", wantErr: "dash"},
		{name: "version 00 with more", in: goodParent + "-x", wantErr: "version 00"},
		{name: "version ff", in: "ff-" + traceHex + "-" + spanHex + "-01", wantErr: "ff"},
		{name: "upper-case version", in: "0A-" + traceHex + "-" + spanHex + "-01", wantErr: "version"},
		{name: "upper-case trace id", in: "00-" + strings.ToUpper(traceHex) + "-" + spanHex + "-01", wantErr: "trace id"},
		{name: "upper-case span id", in: "00-" + traceHex + "-" + strings.ToUpper("00f067aa0ba902bf") + "-01", wantErr: "parent id"},
		{name: "upper-case flags", in: "00-" + traceHex + "-" + spanHex + "-0A", wantErr: "flags"},
		{name: "zero trace id", in: "00-" + strings.Repeat("0", 32) + "-" + spanHex + "-01", wantErr: "all zero"},
		{name: "zero span id", in: "00-" + traceHex + "-" + strings.Repeat("0", 16) + "-01", wantErr: "all zero"},
		{name: "empty", in: "", wantErr: "bytes"},
		{name: "short", in: goodParent[:54], wantErr: "bytes"},
		{name: "wrong separator", in: "00_" + traceHex + "-" + spanHex + "-01", wantErr: "dashes"},
		{name: "fields shifted", in: "00-" + traceHex[:31] + "-" + spanHex + "-011", wantErr: "dashes"},
		{name: "spaces", in: " 0-" + traceHex + "-" + spanHex + "-01", wantErr: "version"},
		{name: "not hex", in: "00-" + strings.Repeat("g", 32) + "-" + spanHex + "-01", wantErr: "trace id"},
		{name: "multi-byte", in: "00-" + strings.Repeat("é", 16) + "-" + spanHex + "-01", wantErr: "trace id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sc, err := ParseTraceparent(tc.in)
			if !tc.ok {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseTraceparent(%q) = %v, %v; want an error saying %q", tc.in, sc, err, tc.wantErr)
				}
				if sc.IsValid() {
					t.Errorf("an invalid traceparent gave a valid %v", sc)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sc.TraceID.String() != traceHex || sc.SpanID.String() != spanHex || !sc.Remote || sc.IsSampled() != tc.sampled || sc.Flags&^FlagsSampled != 0 {
				t.Errorf("ParseTraceparent(%q) = %+v, want trace %s span %s, remote, sampled %v, no other flag", tc.in, sc, traceHex, spanHex, tc.sampled)
			}
			want := "00-" + traceHex + "-" + spanHex + "-00"
			if tc.sampled {
				want = goodParent
			}
			if got := sc.Traceparent(); got != want {
				t.Errorf("written back as %q, want %q", got, want)
			}
		})
	}
	if got := (SpanContext{}).Traceparent(); got != "" {
		t.Errorf("an invalid span context is written as %q, want nothing", got)
	}
}

func TestParseTracestate(t *testing.T) {
	t.Parallel()
	long := func(c string, n int) string { return strings.Repeat(c, n) }
	many := func(n int) string {
		m := make([]string, n)
		for i := range m {
			m[i] = "k" + long("a", i) + "=v"
		}
		return strings.Join(m, ",")
	}
	for _, tc := range []struct {
		name, in, want string
		err            bool
	}{
		{name: "empty", in: "", want: ""},
		{name: "one", in: "congo=t61rcWkgMzE", want: "congo=t61rcWkgMzE"},
		{name: "two", in: "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE", want: "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"},
		{name: "blanks and empty members", in: " a=1 ,\t, b=2\t,", want: "a=1,b=2"},
		{name: "multi-tenant key", in: "fw529a3039@dt=abc,7x_y@s-1=q", want: "fw529a3039@dt=abc,7x_y@s-1=q"},
		{name: "value with space inside", in: "a=x y", want: "a=x y"},
		{name: "key of 256", in: "a" + long("b", 255) + "=1", want: "a" + long("b", 255) + "=1"},
		{name: "thirty-two members", in: many(32), want: many(32)},
		{name: "key of 257", in: "a" + long("b", 256) + "=1", err: true},
		{name: "thirty-three members", in: many(33), err: true},
		{name: "duplicate key", in: "a=1,b=2,a=3", err: true},
		{name: "upper-case key", in: "A=1", err: true},
		{name: "key starts with a digit", in: "1a=1", err: true},
		{name: "no value", in: "a=", err: true},
		{name: "no equals", in: "a", err: true},
		{name: "equals in value", in: "a=b=c", err: true},
		{name: "trailing space in value", in: "a=b \t", want: "a=b"},
		{name: "control character", in: "a=b\x01c", err: true},
		{name: "non-ASCII", in: "a=é", err: true},
		{name: "empty tenant", in: "@dt=1", err: true},
		{name: "system too long", in: "t@" + long("s", 15) + "=1", err: true},
		{name: "value of 257", in: "a=" + long("v", 257), err: true},
		{name: "garbage", in: "=,,==bad", err: true},
		{name: "over 512 bytes: long members go first", in: "a=" + long("v", 200) + "," + many(30),
			want: many(30)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseTracestate(tc.in)
			if tc.err {
				if err == nil || got != "" {
					t.Fatalf("ParseTracestate(%.80q) = %q, %v; want an error", tc.in, got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) > maxStateBytes {
				t.Errorf("%d bytes kept, want at most %d", len(got), maxStateBytes)
			}
			if !strings.HasPrefix(tc.want, got) || (len(tc.want) <= maxStateBytes && got != tc.want) || (tc.want != "" && got == "") {
				t.Errorf("ParseTracestate(%.80q) = %.80q, want %.80q", tc.in, got, tc.want)
			}
		})
	}
}

// TestExtractHeaders: several traceparent fields are malformed; several
// tracestate fields are one list.
func TestExtractHeaders(t *testing.T) {
	t.Parallel()
	h := http.Header{"Traceparent": {goodParent, goodParent}}
	if sc := SpanContextFromContext(Extract(context.Background(), nil, h)); sc.IsValid() {
		t.Errorf("two traceparent fields gave %v, want nothing", sc)
	}
	h = http.Header{"Traceparent": {goodParent}, "Tracestate": {"a=1", "b=2"}}
	if sc := SpanContextFromContext(Extract(context.Background(), nil, h)); sc.TraceState != "a=1,b=2" {
		t.Errorf("tracestate %q, want the fields joined", sc.TraceState)
	}
}

// traceparentRE is the traceparent grammar as a regular expression, to
// check ParseTraceparent against: a version other than ff, 00 with
// exactly four fields, a later one with more after a dash.
var traceparentRE = regexp.MustCompile(`(?s)^(?:00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}|(?:0[1-9a-f]|[1-9a-e][0-9a-f]|f[0-9a-e])-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}(?:-.*)?)$`)

// FuzzTraceparent: any text parses or is refused, never a panic; what
// parses is what the grammar allows, with ids not all zero, and is
// written back as the same version 00 context.
func FuzzTraceparent(f *testing.F) {
	for _, s := range []string{
		goodParent, "00-" + traceHex + "-" + spanHex + "-00", "00-" + traceHex + "-" + spanHex + "-ff",
		"01-" + traceHex + "-" + spanHex + "-01-more", "fe-" + traceHex + "-" + spanHex + "-01",
		"ff-" + traceHex + "-" + spanHex + "-01", "00-" + strings.Repeat("0", 32) + "-" + spanHex + "-01",
		"00-" + traceHex + "-0000000000000000-01", "00-" + strings.ToUpper(traceHex) + "-" + spanHex + "-01",
		goodParent + "-", goodParent[:54], "", "00", "---", strings.Repeat("-", 55), "\x00\xff" + goodParent[2:],
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sc, err := ParseTraceparent(s)
		grammar := traceparentRE.MatchString(s) && !strings.HasPrefix(s[3:], strings.Repeat("0", 32)) && s[36:52] != strings.Repeat("0", 16)
		if (err == nil) != grammar {
			t.Fatalf("ParseTraceparent(%q): error %v, but the grammar says valid=%v", s, err, grammar)
		}
		if err != nil {
			if sc.IsValid() {
				t.Fatalf("ParseTraceparent(%q) failed but gave %v", s, sc)
			}
			return
		}
		back, err := ParseTraceparent(sc.Traceparent())
		if err != nil || back != sc || sc.Traceparent()[3:52] != s[3:52] {
			t.Fatalf("%q read as %v, written as %q, read back as %v, %v", s, sc, sc.Traceparent(), back, err)
		}
	})
}
