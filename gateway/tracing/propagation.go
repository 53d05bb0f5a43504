package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// The _meta keys and HTTP header names of W3C trace context.
const (
	traceparent = "traceparent"
	tracestate  = "tracestate"
)

// traceparentLen is the length of a version 00 traceparent:
// "00-" + 32 hex + "-" + 16 hex + "-" + 2 hex.
const traceparentLen = 55

// ParseTraceparent reads a W3C traceparent (Trace Context, level 1):
// version-traceid-parentid-flags in lower-case hex. Version 00 is exactly
// that; a later version may add fields after a "-", which are ignored;
// version ff is invalid, as is an all-zero trace or parent id. The span
// context returned is marked remote and keeps only the sampled flag, the
// one this version defines. The error says what is wrong, without
// quoting the value (it is the client's, and may be long).
func ParseTraceparent(s string) (SpanContext, error) {
	sc, err := parseTraceparent(s)
	if err != nil {
		return SpanContext{}, err
	}
	return sc, nil
}

func parseTraceparent(s string) (SpanContext, error) {
	var sc SpanContext
	if len(s) < traceparentLen {
		return sc, fmt.Errorf("traceparent: %d bytes, want %d", len(s), traceparentLen)
	}
	var version [1]byte
	if !decodeLowerHex(version[:], s[0:2]) {
		return sc, errors.New("traceparent: the version is not two lower-case hex digits")
	}
	switch {
	case version[0] == 0xff:
		return sc, errors.New("traceparent: version ff is invalid")
	case version[0] == 0 && len(s) != traceparentLen:
		return sc, fmt.Errorf("traceparent: %d bytes, want %d for version 00", len(s), traceparentLen)
	case len(s) > traceparentLen && s[traceparentLen] != '-':
		return sc, errors.New("traceparent: the flags are not followed by a dash")
	}
	if s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return sc, errors.New("traceparent: the fields are not separated by dashes")
	}
	var flags [1]byte
	switch {
	case !decodeLowerHex(sc.TraceID[:], s[3:35]):
		return sc, errors.New("traceparent: the trace id is not 32 lower-case hex digits")
	case !decodeLowerHex(sc.SpanID[:], s[36:52]):
		return sc, errors.New("traceparent: the parent id is not 16 lower-case hex digits")
	case !decodeLowerHex(flags[:], s[53:55]):
		return sc, errors.New("traceparent: the flags are not two lower-case hex digits")
	case !sc.TraceID.IsValid():
		return sc, errors.New("traceparent: the trace id is all zero")
	case !sc.SpanID.IsValid():
		return sc, errors.New("traceparent: the parent id is all zero")
	}
	sc.Flags = TraceFlags(flags[0]) & FlagsSampled
	sc.Remote = true
	return sc, nil
}

// decodeLowerHex decodes s, 2*len(dst) lower-case hex digits, into dst.
func decodeLowerHex(dst []byte, s string) bool {
	if len(s) != 2*len(dst) {
		return false
	}
	for i := range dst {
		hi, ok1 := hexDigit(s[2*i])
		lo, ok2 := hexDigit(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// Bounds of a tracestate (W3C Trace Context, level 1).
const (
	// maxStateMembers is how many list members a tracestate may hold.
	maxStateMembers = 32
	// maxStateBytes is the length a tracestate is cut to, by dropping
	// members: first those longer than bigStateMember, then from the end.
	maxStateBytes  = 512
	bigStateMember = 128
)

// ParseTracestate checks a W3C tracestate, a comma-separated list of
// key=value members, and returns it as it is passed on: without the
// blanks around members, nor empty members, and cut to 512 bytes by
// dropping members (the longest first, as the specification suggests).
// A malformed list, a key given twice or more than 32 members is an
// error, and the whole tracestate is then dropped.
func ParseTracestate(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	var members []string
	rest := s
	for {
		m, tail, more := strings.Cut(rest, ",")
		rest = tail
		m = strings.Trim(m, " \t")
		if m != "" {
			if len(members) == maxStateMembers {
				return "", fmt.Errorf("tracestate: more than %d members", maxStateMembers)
			}
			key, value, ok := strings.Cut(m, "=")
			if !ok || !validStateKey(key) || !validStateValue(value) {
				return "", fmt.Errorf("tracestate: member %d is not key=value as the specification has them", len(members)+1)
			}
			for _, prev := range members {
				if strings.HasPrefix(prev, key) && prev[len(key)] == '=' {
					return "", fmt.Errorf("tracestate: the key %q is given twice", key)
				}
			}
			members = append(members, m)
		}
		if !more {
			break
		}
	}
	n := len(members) - 1
	for _, m := range members {
		n += len(m)
	}
	if n > maxStateBytes {
		kept := members[:0]
		for _, m := range members {
			if len(m) <= bigStateMember {
				kept = append(kept, m)
			}
		}
		members = kept
		for n = len(strings.Join(members, ",")); n > maxStateBytes; n = len(strings.Join(members, ",")) {
			members = members[:len(members)-1]
		}
	}
	return strings.Join(members, ","), nil
}

// validStateKey: a simple key (lcalpha, then up to 255 of lcalpha,
// digits and _-*/), or tenant@system (a tenant of lcalpha or a digit then
// up to 240 more, a system of lcalpha then up to 13 more).
func validStateKey(k string) bool {
	rest := func(s string, n int) bool {
		if len(s) > n {
			return false
		}
		for i := 0; i < len(s); i++ {
			c := s[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '*' || c == '/') {
				return false
			}
		}
		return true
	}
	lower := func(c byte) bool { return 'a' <= c && c <= 'z' }
	tenant, system, multi := strings.Cut(k, "@")
	if !multi {
		return k != "" && lower(k[0]) && rest(k[1:], 255)
	}
	return tenant != "" && (lower(tenant[0]) || '0' <= tenant[0] && tenant[0] <= '9') && rest(tenant[1:], 240) &&
		system != "" && lower(system[0]) && rest(system[1:], 13)
}

// validStateValue: 1 to 256 printable ASCII characters but "," and "=",
// the last not a space.
func validStateValue(v string) bool {
	if v == "" || len(v) > 256 || v[len(v)-1] == ' ' {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c > 0x7e || c == ',' || c == '=' {
			return false
		}
	}
	return true
}

// Extract returns ctx with the remote span context a request carries: its
// _meta's traceparent and tracestate when the traceparent is valid, else
// those of the HTTP headers (nil for stdio). A missing or malformed
// traceparent leaves ctx unchanged; a malformed tracestate is dropped and
// the traceparent kept. A value in _meta that is not a string reads as
// absent, and more than one traceparent header as malformed.
func Extract(ctx context.Context, meta map[string]any, header http.Header) context.Context {
	if meta != nil {
		if tp, ok := meta[traceparent].(string); ok {
			if sc, err := ParseTraceparent(tp); err == nil {
				ts, _ := meta[tracestate].(string)
				sc.TraceState, _ = ParseTracestate(ts)
				return ContextWithRemoteSpanContext(ctx, sc)
			}
		}
	}
	if tps := header.Values(traceparent); len(tps) == 1 {
		if sc, err := ParseTraceparent(tps[0]); err == nil {
			// Several tracestate fields are one list, in order.
			sc.TraceState, _ = ParseTracestate(strings.Join(header.Values(tracestate), ","))
			return ContextWithRemoteSpanContext(ctx, sc)
		}
	}
	return ctx
}

// Inject returns meta with ctx's span context written into it
// (traceparent, and tracestate when it has one), replacing any the client
// sent. meta is copied first, never changed; a ctx without a valid span
// context returns meta as it was.
func Inject(ctx context.Context, meta map[string]any) map[string]any {
	sc := SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return meta
	}
	out := make(map[string]any, len(meta)+2)
	for k, v := range meta {
		if k != traceparent && k != tracestate {
			out[k] = v
		}
	}
	out[traceparent] = sc.Traceparent()
	if sc.TraceState != "" {
		out[tracestate] = sc.TraceState
	}
	return out
}
