package catalog

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

// TestWithHintsCopiesEveryField fails when a field is added to Tool and
// WithHints forgets to copy it.
func TestWithHintsCopiesEveryField(t *testing.T) {
	t.Parallel()
	orig, err := ParseTool("srv", []byte(`{"name":"x","title":"X","description":"d","inputSchema":{"type":"object"},`+
		`"outputSchema":{"type":"object"},"annotations":{"readOnlyHint":true},"_meta":{"anthropic/searchHint":"find x","anthropic/alwaysLoad":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	orig.Keywords = []string{"kw"}
	orig.Hints = []string{"old"}
	c := orig.WithHints([]string{"new one", "new two"})
	if !slices.Equal(c.Hints, []string{"new one", "new two"}) {
		t.Errorf("Hints = %q", c.Hints)
	}
	if !slices.Equal(orig.Hints, []string{"old"}) {
		t.Errorf("the original's Hints changed to %q", orig.Hints)
	}
	ov, cv := reflect.ValueOf(orig).Elem(), reflect.ValueOf(c).Elem()
	for i := range ov.NumField() {
		f := ov.Type().Field(i)
		if !f.IsExported() || f.Name == "Hints" {
			continue
		}
		if ov.Field(i).IsZero() {
			t.Errorf("the fixture leaves %s empty: set it so that the copy is checked", f.Name)
		}
		if !reflect.DeepEqual(ov.Field(i).Interface(), cv.Field(i).Interface()) {
			t.Errorf("WithHints does not copy %s", f.Name)
		}
	}
	if c.ID() != orig.ID() || c.Tokens() != orig.Tokens() {
		t.Errorf("copy: id %q tokens %d, want %q %d", c.ID(), c.Tokens(), orig.ID(), orig.Tokens())
	}
}

func TestServerWithHints(t *testing.T) {
	t.Parallel()
	srv, err := NewServer("s", []json.RawMessage{json.RawMessage(`{"name":"a"}`), json.RawMessage(`{"name":"b"}`)}, []string{"k"}, false)
	if err != nil {
		t.Fatal(err)
	}
	c := srv.WithHints(func(t *Tool) []string {
		if t.Name == "a" {
			return []string{"hint a"}
		}
		return nil
	})
	if c == srv || c.Tools[0] == srv.Tools[0] {
		t.Fatal("WithHints returned the same server or tool")
	}
	if !slices.Equal(c.Tools[0].Hints, []string{"hint a"}) || c.Tools[1].Hints != nil {
		t.Errorf("hints = %q, %q", c.Tools[0].Hints, c.Tools[1].Hints)
	}
	if srv.Tools[0].Hints != nil || c.Key != "s" || !slices.Equal(c.Keywords, []string{"k"}) {
		t.Errorf("server copy wrong: orig hints %q, key %q keywords %q", srv.Tools[0].Hints, c.Key, c.Keywords)
	}
}
