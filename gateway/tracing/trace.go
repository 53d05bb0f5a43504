package tracing

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"
)

// TraceID names a trace: 16 bytes, of which all zero is invalid.
type TraceID [16]byte

// IsValid reports whether id is not all zero.
func (id TraceID) IsValid() bool { return id != TraceID{} }

// String is id in lower-case hex, as traceparent carries it.
func (id TraceID) String() string { return hex.EncodeToString(id[:]) }

// SpanID names a span within its trace: 8 bytes, of which all zero is
// invalid.
type SpanID [8]byte

// IsValid reports whether id is not all zero.
func (id SpanID) IsValid() bool { return id != SpanID{} }

// String is id in lower-case hex, as traceparent carries it.
func (id SpanID) String() string { return hex.EncodeToString(id[:]) }

// TraceFlags are the W3C trace flags of a span context.
type TraceFlags byte

// FlagsSampled marks a trace whose spans are recorded.
const FlagsSampled TraceFlags = 0x01

// SpanContext is what identifies a span to another: its trace and span
// ids, the trace flags, the vendors' tracestate (checked, as it is
// passed on), and whether it came from another process.
type SpanContext struct {
	TraceID    TraceID
	SpanID     SpanID
	Flags      TraceFlags
	TraceState string
	Remote     bool
}

// IsValid reports whether both ids are valid.
func (sc SpanContext) IsValid() bool { return sc.TraceID.IsValid() && sc.SpanID.IsValid() }

// IsSampled reports whether the trace is sampled.
func (sc SpanContext) IsSampled() bool { return sc.Flags&FlagsSampled != 0 }

// Traceparent returns sc as a version 00 traceparent, "" when sc is not
// valid.
func (sc SpanContext) Traceparent() string {
	if !sc.IsValid() {
		return ""
	}
	const digits = "0123456789abcdef"
	var b [traceparentLen]byte
	b[0], b[1], b[2] = '0', '0', '-'
	i := 3
	for _, c := range sc.TraceID {
		b[i], b[i+1] = digits[c>>4], digits[c&0xf]
		i += 2
	}
	b[i] = '-'
	i++
	for _, c := range sc.SpanID {
		b[i], b[i+1] = digits[c>>4], digits[c&0xf]
		i += 2
	}
	b[i] = '-'
	f := sc.Flags & FlagsSampled
	b[i+1], b[i+2] = digits[f>>4], digits[f&0xf]
	return string(b[:])
}

// spanKey is the context key of the current span.
type spanKey struct{}

// ContextWithSpan returns ctx with s as its current span, the parent of
// the spans started under it.
func ContextWithSpan(ctx context.Context, s *Span) context.Context {
	return context.WithValue(ctx, spanKey{}, s)
}

// SpanFromContext returns the current span of ctx: one started here, or
// a remote parent read by Extract (which records nothing); nil when
// there is none.
func SpanFromContext(ctx context.Context) *Span {
	s, _ := ctx.Value(spanKey{}).(*Span)
	return s
}

// SpanContextFromContext returns the span context of ctx's current span,
// the zero SpanContext (invalid) when there is none.
func SpanContextFromContext(ctx context.Context) SpanContext {
	return SpanFromContext(ctx).SpanContext()
}

// ContextWithRemoteSpanContext returns ctx with sc, marked remote, as the
// parent of the spans started under it.
func ContextWithRemoteSpanContext(ctx context.Context, sc SpanContext) context.Context {
	sc.Remote = true
	return ContextWithSpan(ctx, &Span{sc: sc})
}

// Key is the name of an attribute.
type Key string

// Attr is an attribute of a span or resource: a key and its value.
type Attr struct {
	Key   Key
	Value Value
}

// String returns the attribute k with the string value v.
func (k Key) String(v string) Attr { return Attr{k, Value{typ: TypeString, s: v}} }

// Int returns the attribute k with the integer value v.
func (k Key) Int(v int) Attr { return k.Int64(int64(v)) }

// Int64 returns the attribute k with the integer value v.
func (k Key) Int64(v int64) Attr { return Attr{k, Value{typ: TypeInt64, n: uint64(v)}} }

// Bool returns the attribute k with the boolean value v.
func (k Key) Bool(v bool) Attr {
	var n uint64
	if v {
		n = 1
	}
	return Attr{k, Value{typ: TypeBool, n: n}}
}

// Float64 returns the attribute k with the floating-point value v.
func (k Key) Float64(v float64) Attr {
	return Attr{k, Value{typ: TypeFloat64, n: math.Float64bits(v)}}
}

// StringSlice returns the attribute k with the list of strings v (a
// copy, so that the caller may reuse v).
func (k Key) StringSlice(v []string) Attr {
	return Attr{k, Value{typ: TypeStringSlice, ss: append([]string(nil), v...)}}
}

// Type is the type of an attribute's value.
type Type int

// The types of attribute values.
const (
	TypeInvalid Type = iota
	TypeString
	TypeInt64
	TypeBool
	TypeFloat64
	TypeStringSlice
)

// Value is the value of an attribute; the zero Value is invalid.
type Value struct {
	typ Type
	s   string
	n   uint64 // an int64, a bool (0 or 1), or a float64's bits
	ss  []string
}

// Type returns the type of v.
func (v Value) Type() Type { return v.typ }

// AsString returns a string value ("" for another type).
func (v Value) AsString() string { return v.s }

// AsInt64 returns an integer value (0 for another type).
func (v Value) AsInt64() int64 {
	if v.typ != TypeInt64 {
		return 0
	}
	return int64(v.n)
}

// AsBool returns a boolean value (false for another type).
func (v Value) AsBool() bool { return v.typ == TypeBool && v.n == 1 }

// AsFloat64 returns a floating-point value (0 for another type).
func (v Value) AsFloat64() float64 {
	if v.typ != TypeFloat64 {
		return 0
	}
	return math.Float64frombits(v.n)
}

// AsStringSlice returns a list of strings (nil for another type). The
// list is the value's own: the caller must not change it.
func (v Value) AsStringSlice() []string { return v.ss }

// String is v as text: a string as it is, a number or a boolean as Go
// writes it, a list of strings as a JSON array, "" when invalid.
func (v Value) String() string {
	switch v.typ {
	case TypeString:
		return v.s
	case TypeInt64:
		return strconv.FormatInt(int64(v.n), 10)
	case TypeBool:
		return strconv.FormatBool(v.n == 1)
	case TypeFloat64:
		return strconv.FormatFloat(math.Float64frombits(v.n), 'g', -1, 64)
	case TypeStringSlice:
		b, _ := json.Marshal(v.ss)
		return string(b)
	}
	return ""
}
