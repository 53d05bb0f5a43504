package hints

import (
	"bytes"
	"testing"
)

// FuzzParse checks that Parse never panics, that what it accepts passes
// its own checks, and that writing an accepted file and reading it back
// gives the same entries.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"id":"a/x","hints":["find x","get x"]}`,
		"{\"id\":\"a/x\",\"hints\":[\"x\"],\"digest\":\"sha256:" + string(bytes.Repeat([]byte("0"), 64)) + "\"}\n{\"id\":\"b/y\",\"hints\":[\"y\"]}",
		`{"id":"a/x","hints":[1]}`,
		`{"id":"a/x","hints":["a\u0000"]}`,
		"\xef\xbb\xbf\n\n{\"id\":\"a/x\",\"hints\":[\" \\u2028 \"]}",
		`{"id":"a/x","hints":["x"]}` + "\n" + `{"id":"a/x","hints":["x"]}`,
		`[]`, `null`, `{"id":"/","hints":["x"]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			if s != nil {
				t.Fatal("Parse returned a set with an error")
			}
			return
		}
		for _, e := range s.Entries() {
			if _, err := checkEntry(e); err != nil {
				t.Fatalf("accepted entry %+v fails its checks: %v", e, err)
			}
		}
		back, err := Parse(s.Marshal())
		if err != nil {
			t.Fatalf("re-reading what was written: %v\n%s", err, s.Marshal())
		}
		if !entriesEqual(back.Entries(), s.Entries()) {
			t.Fatalf("round trip changed the entries: %+v vs %+v", back.Entries(), s.Entries())
		}
	})
}
