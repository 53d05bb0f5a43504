package upstream

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestBoundDefinitions: what boundDefinitions keeps of each definition.
func TestBoundDefinitions(t *testing.T) {
	t.Parallel()
	tool := func(desc any, schema any) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"name": "t", "description": desc, "inputSchema": schema})
		return b
	}
	obj := map[string]any{"type": "object"}
	long := strings.Repeat("é", MaxDescriptionBytes) // two bytes each: a cut lands inside one
	bigSchema := map[string]any{"type": "object", "description": strings.Repeat("x", maxToolBytes)}
	for _, c := range []struct {
		name    string
		raw     json.RawMessage
		kept    bool
		cut     bool // the description was cut
		sameRaw bool // the bytes are the server's own
	}{
		{"short", tool("Read a file.", obj), true, false, true},
		{"long description", tool(long, obj), true, true, false},
		{"long description, number", tool(12345, bigSchema), false, false, false},
		{"schema over 1 MiB", tool("ok", bigSchema), false, false, false},
		{"long and not JSON", json.RawMessage(`{"name":"t","description":"` + strings.Repeat("x", MaxDescriptionBytes+1)), true, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var warned []string
			out := boundDefinitions([]json.RawMessage{tool("first", obj), c.raw}, func(msg string, _ ...any) { warned = append(warned, msg) })
			if !c.kept {
				if len(out) != 1 || len(warned) != 1 {
					t.Fatalf("kept %d of 2 definitions, warned %q; want the first alone, and a warning", len(out), warned)
				}
				return
			}
			if len(out) != 2 {
				t.Fatalf("kept %d of 2 definitions", len(out))
			}
			if same := string(out[1]) == string(c.raw); same != c.sameRaw {
				t.Errorf("the definition is the server's own bytes: %v, want %v", same, c.sameRaw)
			}
			if !c.cut {
				return
			}
			var got struct{ Description string }
			if err := json.Unmarshal(out[1], &got); err != nil {
				t.Fatal(err)
			}
			if !utf8.ValidString(got.Description) || !strings.HasSuffix(got.Description, DescriptionCut) ||
				len(got.Description) > MaxDescriptionBytes+len(DescriptionCut) {
				t.Errorf("the cut description is %d bytes, valid UTF-8 %v", len(got.Description), utf8.ValidString(got.Description))
			}
		})
	}
}
