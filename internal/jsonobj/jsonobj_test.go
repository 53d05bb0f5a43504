package jsonobj

import (
	"encoding/json"
	"testing"
)

func TestEditKeepsOtherBytes(t *testing.T) {
	t.Parallel()
	in := `{"b": 1,  "a":{"x" : [1, 2]},"c":"\u00e9"}`
	o, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	o.Set("b", json.RawMessage(`2`))
	o.Set("d", json.RawMessage(`true`))
	if !o.Del("c") || o.Del("zz") {
		t.Fatal("Del reported wrongly")
	}
	if got, want := string(o.Marshal()), `{"b":2,"a":{"x" : [1, 2]},"d":true}`; got != want {
		t.Errorf("Marshal = %s, want %s", got, want)
	}
	if string(o.Get("a")) != `{"x" : [1, 2]}` || o.Get("c") != nil {
		t.Errorf("Get: %s / %s", o.Get("a"), o.Get("c"))
	}
	c := o.Clone()
	c.Set("b", json.RawMessage(`3`))
	if string(o.Get("b")) != "2" {
		t.Error("Clone shares members")
	}
}

func TestParseRefuses(t *testing.T) {
	t.Parallel()
	for _, in := range []string{``, `[]`, `"x"`, `{"a":1} {}`, `{"a":}`, `{"a":1`} {
		if _, err := Parse([]byte(in)); err == nil {
			t.Errorf("Parse(%q) accepted", in)
		}
	}
	if els, ok := SplitArray([]byte(` [1, {"a":2}] `)); !ok || len(els) != 2 || string(JoinArray(els)) != `[1,{"a":2}]` {
		t.Errorf("SplitArray/JoinArray: %v %v", els, ok)
	}
	if _, ok := SplitArray([]byte(`{}`)); ok {
		t.Error("SplitArray accepted an object")
	}
}

// FuzzParse checks that an unedited object marshals to JSON equal to its
// input, whatever the input.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"b":[true,null]}`, `{"\u0041":"x"}`, `{"a":{"a":{}}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := Parse([]byte(s))
		if err != nil {
			return
		}
		var a, b any
		if json.Unmarshal([]byte(s), &a) != nil {
			t.Fatalf("Parse accepted invalid JSON %q", s)
		}
		if err := json.Unmarshal(o.Marshal(), &b); err != nil {
			t.Fatalf("Marshal of %q is not JSON: %v", s, err)
		}
	})
}
