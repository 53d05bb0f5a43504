package tracing

import (
	"context"
	"encoding/binary"
	"strings"
	"sync"
	"testing"
)

// TestSpanTree: children share their parent's trace and tracestate, ids
// are valid and distinct, and a sampled span records what it is given.
func TestSpanTree(t *testing.T) {
	t.Parallel()
	rec := &Recorder{}
	p := NewProvider(ProviderOptions{Processor: rec, Resource: NewResource("", Key("service.name").String("s"))})
	ctx := Extract(context.Background(), map[string]any{"traceparent": goodParent, "tracestate": "a=1"}, nil)
	ctx, root := p.Start(ctx, "root", KindServer)
	_, child := p.Start(ctx, "child", 0)
	_, other := p.Start(context.Background(), "other", KindClient)
	child.End()
	root.End()
	other.End()
	rs, cs, os := root.SpanContext(), child.SpanContext(), other.SpanContext()
	switch {
	case rs.TraceID.String() != traceHex || cs.TraceID != rs.TraceID || rs.TraceState != "a=1" || cs.TraceState != "a=1":
		t.Errorf("root %v, child %v: want the client's trace and tracestate", rs, cs)
	case root.Parent().SpanID.String() != spanHex || !root.Parent().Remote || child.Parent() != rs:
		t.Errorf("parents: root's %v, child's %v", root.Parent(), child.Parent())
	case !os.IsValid() || os.TraceID == rs.TraceID || other.Parent().IsValid():
		t.Errorf("a root span has %v with parent %v, want new ids and none", os, other.Parent())
	case rs.SpanID == cs.SpanID || rs.SpanID == os.SpanID || cs.SpanID == os.SpanID:
		t.Errorf("span ids repeat: %v %v %v", rs.SpanID, cs.SpanID, os.SpanID)
	case !rs.IsSampled() || !cs.IsSampled() || rs.Remote || cs.Remote:
		t.Errorf("flags: %v %v, want sampled, local", rs, cs)
	case len(rec.Ended()) != 3 || rec.Ended()[0] != child:
		t.Errorf("%d spans ended, want 3, the child first", len(rec.Ended()))
	case child.Kind() != 0 || root.Kind() != KindServer || child.Resource().Attributes()[0].Value.AsString() != "s":
		t.Errorf("kinds %v %v, resource %v", root.Kind(), child.Kind(), child.Resource())
	case root.EndTime().Before(root.StartTime()) || root.EndTime().IsZero():
		t.Errorf("root ran from %v to %v", root.StartTime(), root.EndTime())
	}
}

// TestSpanRecords: attributes (a key set twice keeps its last value, past
// the bound keys are dropped and counted, strings clipped), the status
// rules, and that an ended span no longer changes.
func TestSpanRecords(t *testing.T) {
	t.Parallel()
	p := NewProvider(ProviderOptions{MaxAttributes: 3, MaxAttributeBytes: 8})
	_, s := p.Start(context.Background(), "s", KindInternal)
	list := []string{"short", "much longer than eight"}
	s.SetAttributes(Key("a").String("1"), Key("b").Int(2), Key("a").String("123456789"))
	s.SetAttributes(Key("c").StringSlice(list), Key("d").Bool(true), Key("e").Float64(1.5))
	list[0] = "changed"
	s.SetStatus(StatusUnset, "ignored")
	s.SetStatus(StatusError, "first")
	s.SetStatus(StatusError, "second")
	s.End()
	s.SetAttributes(Key("b").Int(3))
	s.SetStatus(StatusOK, "")
	s.End()
	attrs := s.Attributes()
	got := map[Key]string{}
	for _, a := range attrs {
		got[a.Key] = a.Value.String()
	}
	want := map[Key]string{"a": "12345…", "b": "2", "c": `["short","much …"]`}
	if len(got) != len(want) || s.DroppedAttributes() != 2 {
		t.Fatalf("attributes %v, %d dropped; want %v and 2 dropped", got, s.DroppedAttributes(), want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s = %q, want %q", k, got[k], w)
		}
	}
	if st := s.Status(); st != (Status{StatusError, "second"}) {
		t.Errorf("status %v, want the last error", st)
	}
	if s.IsRecording() {
		t.Error("an ended span says it is recording")
	}

	tiny := NewProvider(ProviderOptions{MaxAttributeBytes: 2})
	_, ts := tiny.Start(context.Background(), "tiny", KindInternal)
	ts.SetAttributes(Key("k").String("éa"), Key("l").String("abc"))
	if got := ts.Attributes(); got[0].Value.AsString() != "é" || got[1].Value.AsString() != "ab" {
		t.Errorf("a bound of 2 bytes kept %v", got)
	}

	_, ok := p.Start(context.Background(), "ok", KindInternal)
	ok.SetStatus(StatusOK, "dropped")
	ok.SetStatus(StatusError, "too late")
	if st := ok.Status(); st != (Status{Code: StatusOK}) {
		t.Errorf("status %v: OK is final and has no description", st)
	}
}

// TestValueString: each type of value as text, and a value's accessors
// of another type give the zero value.
func TestValueString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a    Attr
		want string
		typ  Type
	}{
		{Key("k").String("v"), "v", TypeString},
		{Key("k").Int(-3), "-3", TypeInt64},
		{Key("k").Int64(1 << 40), "1099511627776", TypeInt64},
		{Key("k").Bool(false), "false", TypeBool},
		{Key("k").Float64(0.25), "0.25", TypeFloat64},
		{Key("k").StringSlice([]string{`a"b`, ""}), `["a\"b",""]`, TypeStringSlice},
		{Attr{}, "", TypeInvalid},
	} {
		if got := tc.a.Value.String(); got != tc.want || tc.a.Value.Type() != tc.typ {
			t.Errorf("%v: %q of type %v, want %q of %v", tc.a, got, tc.a.Value.Type(), tc.want, tc.typ)
		}
	}
	v := Key("k").String("7").Value
	if v.AsInt64() != 0 || v.AsBool() || v.AsFloat64() != 0 || v.AsStringSlice() != nil {
		t.Errorf("a string value read as another type is not zero")
	}
}

// TestSampling: the parent decides when there is one; a root is sampled
// at the ratio, by its trace id alone.
func TestSampling(t *testing.T) {
	t.Parallel()
	id := func(n uint64) TraceID {
		var tid TraceID
		tid[0] = 1
		binary.BigEndian.PutUint64(tid[8:], n)
		return tid
	}
	half := RatioSampler(0.5)
	switch {
	case !half(SpanContext{}, id(0)) || !half(SpanContext{}, id(1<<63-1)) || half(SpanContext{}, id(1<<63)) || half(SpanContext{}, id(^uint64(0))):
		t.Error("ratio 0.5 does not sample the lower half of the trace ids' last 8 bytes")
	case !RatioSampler(1)(SpanContext{}, id(^uint64(0))) || RatioSampler(0)(SpanContext{}, id(0)) || RatioSampler(-1)(SpanContext{}, id(0)):
		t.Error("ratio 1 or 0 is not all or nothing")
	}
	parent := SpanContext{TraceID: id(1), SpanID: SpanID{1}, Remote: true}
	pb := ParentBased(AlwaysSample)
	if pb(parent, parent.TraceID) {
		t.Error("an unsampled parent's child is sampled")
	}
	parent.Flags = FlagsSampled
	if !ParentBased(NeverSample)(parent, parent.TraceID) {
		t.Error("a sampled parent's child is not sampled")
	}

	// Among many roots, about the ratio are sampled.
	p := NewProvider(ProviderOptions{Sampler: ParentBased(RatioSampler(0.25))})
	n := 0
	for range 4000 {
		ctx, s := p.Start(context.Background(), "r", KindServer)
		_, c := p.Start(ctx, "c", KindInternal)
		if s.SpanContext().IsSampled() != c.SpanContext().IsSampled() || s.IsRecording() != s.SpanContext().IsSampled() {
			t.Fatal("a child does not follow its root, or a span records against its flags")
		}
		if s.IsRecording() {
			n++
		}
	}
	if n < 800 || n > 1200 {
		t.Errorf("%d of 4000 roots sampled at 0.25", n)
	}
}

// TestUnsampled: a span of an unsampled trace has ids of its own for the
// trace context it carries on, records nothing and reaches no processor.
func TestUnsampled(t *testing.T) {
	t.Parallel()
	rec := &Recorder{}
	p := NewProvider(ProviderOptions{Processor: rec})
	ctx := Extract(context.Background(), map[string]any{"traceparent": "00-" + traceHex + "-" + spanHex + "-00"}, nil)
	ctx, s := p.Start(ctx, "s", KindServer)
	s.SetAttributes(Key("a").String("b"))
	s.SetStatus(StatusError, "x")
	s.End()
	meta := Inject(ctx, nil)
	if want := "00-" + traceHex + "-" + s.SpanContext().SpanID.String() + "-00"; meta["traceparent"] != want || s.SpanContext().SpanID.String() == spanHex {
		t.Errorf("the unsampled span carries %v, want %s", meta, want)
	}
	if s.IsRecording() || len(rec.Ended()) != 0 {
		t.Errorf("an unsampled span recorded")
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, s := p.Start(context.Background(), "late", KindServer); s.IsRecording() {
		t.Error("a provider shut down records")
	}
	var none *Span
	none.End()
	none.SetAttributes(Key("a").Bool(true))
	if none.IsRecording() || none.SpanContext().IsValid() {
		t.Error("a nil span is not inert")
	}
}

// TestEndRace: ending a span from many goroutines at once, while others
// set attributes, hands it on once.
func TestEndRace(t *testing.T) {
	t.Parallel()
	rec := &Recorder{}
	p := NewProvider(ProviderOptions{Processor: rec})
	_, s := p.Start(context.Background(), "s", KindInternal)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			s.SetAttributes(Key("k").Int(i))
			s.SetStatus(StatusError, strings.Repeat("x", i))
			s.End()
		})
	}
	wg.Wait()
	if len(rec.Ended()) != 1 {
		t.Errorf("the span was handed on %d times", len(rec.Ended()))
	}
}

// BenchmarkSpan: starting and ending a span of a sampled trace (handed to
// a processor that keeps nothing) and of an unsampled one.
func BenchmarkSpan(b *testing.B) {
	for _, bc := range []struct {
		name   string
		sample Sampler
	}{{"sampled", AlwaysSample}, {"unsampled", NeverSample}} {
		b.Run(bc.name, func(b *testing.B) {
			p := NewProvider(ProviderOptions{Sampler: bc.sample, Processor: discard{}})
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				_, s := p.Start(ctx, "search", KindInternal)
				s.SetAttributes(KeyQueryLength.Int(10), KeyResults.Int(3))
				s.End()
			}
		})
	}
}

// discard is a SpanProcessor that keeps nothing.
type discard struct{}

func (discard) OnEnd(*Span)                    {}
func (discard) Shutdown(context.Context) error { return nil }
