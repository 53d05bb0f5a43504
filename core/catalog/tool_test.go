package catalog

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"
)

func TestParseTool(t *testing.T) {
	t.Parallel()
	type want struct {
		name, title, desc, searchHint string
		alwaysLoad                    bool
		input, output, annots, meta   string // exact raw bytes; "" means absent
	}
	tests := []struct {
		name string
		raw  string
		want want
	}{
		{
			name: "minimal",
			raw:  `{"name":"ping"}`,
			want: want{name: "ping"},
		},
		{
			name: "all fields with odd white space and unknown fields",
			raw: "{\n\t\"name\" : \"create_issue\",\r\n  \"title\":\"Create issue\", \"description\": \"Opens an issue.\\nSecond line \\u00e9\",\n" +
				"  \"inputSchema\": { \"type\" : \"object\",\n    \"properties\": {\"b\": {}, \"a\": {}} },\n" +
				"  \"outputSchema\":{\"type\":\"object\"},\n" +
				"  \"annotations\": {\"readOnlyHint\": true},\n" +
				"  \"x-unknown\": [1, {\"deep\": null}],\n" +
				"  \"_meta\": {\"vendor/other\": 1}\n}",
			want: want{
				name: "create_issue", title: "Create issue", desc: "Opens an issue.\nSecond line é",
				input:  "{ \"type\" : \"object\",\n    \"properties\": {\"b\": {}, \"a\": {}} }",
				output: `{"type":"object"}`,
				annots: `{"readOnlyHint": true}`,
				meta:   `{"vendor/other": 1}`,
			},
		},
		{
			name: "alwaysLoad true",
			raw:  `{"name":"a","_meta":{"anthropic/alwaysLoad":true}}`,
			want: want{name: "a", alwaysLoad: true, meta: `{"anthropic/alwaysLoad":true}`},
		},
		{
			name: "alwaysLoad false",
			raw:  `{"name":"a","_meta":{"anthropic/alwaysLoad":false}}`,
			want: want{name: "a", meta: `{"anthropic/alwaysLoad":false}`},
		},
		{
			name: "alwaysLoad as a string is not honoured",
			raw:  `{"name":"a","_meta":{"anthropic/alwaysLoad":"true"}}`,
			want: want{name: "a", meta: `{"anthropic/alwaysLoad":"true"}`},
		},
		{
			name: "searchHint and alwaysLoad together",
			raw:  `{"name":"a","_meta":{"anthropic/searchHint":"sql select","anthropic/alwaysLoad":true}}`,
			want: want{name: "a", alwaysLoad: true, searchHint: "sql select",
				meta: `{"anthropic/searchHint":"sql select","anthropic/alwaysLoad":true}`},
		},
		{
			name: "searchHint that is not a string is ignored",
			raw:  `{"name":"a","_meta":{"anthropic/searchHint":["x"]}}`,
			want: want{name: "a", meta: `{"anthropic/searchHint":["x"]}`},
		},
		{
			name: "_meta that is not an object is kept but ignored",
			raw:  `{"name":"a","_meta":[1,2]}`,
			want: want{name: "a", meta: `[1,2]`},
		},
		{
			name: "null members count as absent",
			raw:  `{"name":"a","inputSchema":null,"outputSchema":null,"annotations":null,"_meta":null}`,
			want: want{name: "a"},
		},
		{
			name: "annotations title is the fallback title",
			raw:  `{"name":"a","annotations":{"title":"From annotations","readOnlyHint":true}}`,
			want: want{name: "a", title: "From annotations", annots: `{"title":"From annotations","readOnlyHint":true}`},
		},
		{
			name: "top-level title wins over annotations title",
			raw:  `{"name":"a","title":"Top","annotations":{"title":"From annotations"}}`,
			want: want{name: "a", title: "Top", annots: `{"title":"From annotations"}`},
		},
		{
			name: "annotations title of the wrong type is ignored",
			raw:  `{"name":"a","annotations":{"title":7}}`,
			want: want{name: "a", annots: `{"title":7}`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			raw := []byte(tc.raw)
			tool, err := ParseTool("srv", raw)
			if err != nil {
				t.Fatalf("ParseTool: %v", err)
			}
			got := want{
				name: tool.Name, title: tool.Title, desc: tool.Description, searchHint: tool.SearchHint,
				alwaysLoad: tool.AlwaysLoad,
				input:      string(tool.InputSchema), output: string(tool.OutputSchema),
				annots: string(tool.Annotations), meta: string(tool.Meta),
			}
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
			if tool.Server != "srv" {
				t.Errorf("Server = %q, want srv", tool.Server)
			}
			if !bytes.Equal(tool.Raw, raw) {
				t.Errorf("Raw not kept byte for byte:\n got %q\nwant %q", tool.Raw, raw)
			}
			// Raw and the members are copies: changing the input changes
			// nothing in the tool.
			before := string(tool.Raw)
			beforeIn := string(tool.InputSchema)
			for i := range raw {
				raw[i] = 'X'
			}
			if string(tool.Raw) != before || string(tool.InputSchema) != beforeIn {
				t.Error("tool shares memory with the input slice")
			}
			if id := tool.ID(); id != "srv/"+tc.want.name {
				t.Errorf("ID() = %q", id)
			}
			if w := tool.WireName(); w != "srv__"+tc.want.name {
				t.Errorf("WireName() = %q", w)
			}
		})
	}
}

func TestParseToolErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, raw string
		want      []string // substrings of the error
	}{
		{"missing name", `{"description":"no name"}`, []string{`"my-server"`, `missing "name"`}},
		{"empty name", `{"name":""}`, []string{`"my-server"`, `missing "name"`}},
		{"blank name", `{"name":"  \t"}`, []string{`"my-server"`, `missing "name"`}},
		{"null", `null`, []string{`"my-server"`, "not an object"}},
		{"field names are case-sensitive", `{"NAME":"x","Description":"y"}`, []string{`"my-server"`, `missing "name"`}},
		{"name not a string", `{"name":42}`, []string{`"my-server"`}},
		{"array", `[{"name":"a"}]`, []string{`"my-server"`}},
		{"invalid JSON", `{"name":"a"`, []string{`"my-server"`}},
		{"empty input", ``, []string{`"my-server"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tool, err := ParseTool("my-server", json.RawMessage(tc.raw))
			if err == nil {
				t.Fatalf("ParseTool(%q) = %+v, want an error", tc.raw, tool)
			}
			if tool != nil {
				t.Errorf("ParseTool returned a tool along with error %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestParams(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		schema string
		want   []Param
	}{
		{"no schema", ``, nil},
		{"no properties", `{"type":"object"}`, nil},
		{"empty properties", `{"type":"object","properties":{}}`, nil},
		{"properties not an object", `{"type":"object","properties":[{"a":1}]}`, nil},
		{"schema not an object", `"string"`, nil},
		{
			name: "document order, not alphabetical",
			schema: `{"type":"object","properties":{
				"zebra":{"type":"string","description":"last letter"},
				"apple":{"type":"string","description":"first letter"},
				"mango":{"type":"string"}}}`,
			want: []Param{
				{Name: "zebra", Description: "last letter"},
				{Name: "apple", Description: "first letter"},
				{Name: "mango"},
			},
		},
		{
			name: "required is marked, unknown required names ignored",
			schema: `{"required":["b","nope"],"type":"object","properties":{
				"a":{"description":"A"},"b":{"description":"B"},"c":{"description":"C"}}}`,
			want: []Param{
				{Name: "a", Description: "A"},
				{Name: "b", Description: "B", Required: true},
				{Name: "c", Description: "C"},
			},
		},
		{
			name:   "title is the fallback description",
			schema: `{"type":"object","properties":{"a":{"title":"The A"},"b":{"title":"T","description":"D"}}}`,
			want:   []Param{{Name: "a", Description: "The A"}, {Name: "b", Description: "D"}},
		},
		{
			name:   "nested properties are not top-level parameters",
			schema: `{"type":"object","properties":{"outer":{"type":"object","description":"O","properties":{"inner":{"description":"I"}}}},"required":["outer"]}`,
			want:   []Param{{Name: "outer", Description: "O", Required: true}},
		},
		{
			name:   "property schemas that are not objects",
			schema: `{"type":"object","properties":{"a":true,"b":{"description":"B"}}}`,
			want:   []Param{{Name: "a"}, {Name: "b", Description: "B"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			raw := `{"name":"t"`
			if tc.schema != "" {
				raw += `,"inputSchema":` + tc.schema
			}
			tool, err := ParseTool("s", json.RawMessage(raw+"}"))
			if err != nil {
				t.Fatal(err)
			}
			if got := tool.Params(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Params() = %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestDefinition(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		raw  string
	}{
		{"no schema", `{"name":"bare","description":"Nothing to take."}`},
		{"compact schema", `{"name":"a","description":"d","inputSchema":{"type":"object","properties":{"x":{"type":"string"}}}}`},
		{"spread-out schema", "{\"name\":\"a\",\"description\":\"d\",\"inputSchema\":{\n  \"type\" : \"object\",\n\t\"properties\" : {\n    \"q\" : { \"type\" : \"string\", \"description\" : \"keep  these   spaces\" },\n    \"a\" : { \"enum\" : [ 1 , 2.50 , 3e2 ] }\n  },\n  \"required\" : [ \"q\" ]\n}}"},
		{"escapes in name and description", `{"name":"quo\"te","description":"<b>&amp;</b> \\ \u2028 tab\t","inputSchema":{"description":"\u003c\u003e"}}`},
		{"output schema and annotations are not part of it", `{"name":"a","description":"d","inputSchema":{"type":"object"},"outputSchema":{"type":"object"},"annotations":{"readOnlyHint":true},"_meta":{"x":1}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tool, err := ParseTool("s", json.RawMessage(tc.raw))
			if err != nil {
				t.Fatal(err)
			}
			def := tool.Definition()
			var d struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				InputSchema json.RawMessage `json:"input_schema"`
			}
			dec := json.NewDecoder(bytes.NewReader(def))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&d); err != nil {
				t.Fatalf("Definition() = %s: %v", def, err)
			}
			if d.Name != tool.Name || d.Description != tool.Description {
				t.Errorf("name/description = %q/%q, want %q/%q", d.Name, d.Description, tool.Name, tool.Description)
			}
			// Compact: compacting again changes nothing.
			var again bytes.Buffer
			if err := json.Compact(&again, def); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again.Bytes(), def) {
				t.Errorf("Definition() is not compact:\n%s", def)
			}
			// The schema is the input schema compacted: same bytes as
			// json.Compact, so key order and number spelling are kept.
			wantSchema := []byte(`{"type":"object"}`)
			if len(tool.InputSchema) > 0 {
				var b bytes.Buffer
				if err := json.Compact(&b, tool.InputSchema); err != nil {
					t.Fatal(err)
				}
				wantSchema = b.Bytes()
			}
			if !bytes.Equal(d.InputSchema, wantSchema) {
				t.Errorf("input_schema = %s, want %s", d.InputSchema, wantSchema)
			}
			if len(tool.InputSchema) > 0 {
				var a, b any
				if err := json.Unmarshal(tool.InputSchema, &a); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(d.InputSchema, &b); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(a, b) {
					t.Errorf("input_schema differs semantically:\n got %v\nwant %v", b, a)
				}
			}
			if !bytes.Equal(tool.Definition(), def) {
				t.Error("Definition() is not deterministic")
			}
		})
	}
}

func TestToolTokensCached(t *testing.T) {
	t.Parallel()
	tool, err := ParseTool("s", json.RawMessage(`{"name":"search_docs","description":"Search the documentation for a phrase.","inputSchema":{"type":"object","properties":{"q":{"type":"string","description":"The phrase"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := CountTokens(string(tool.Definition()))
	if want <= 0 {
		t.Fatalf("CountTokens(definition) = %d", want)
	}
	// Many goroutines at once: every one sees the same count (and -race
	// checks the cache is safe).
	var wg sync.WaitGroup
	got := make([]int, 16)
	for i := range got {
		wg.Go(func() { got[i] = tool.Tokens() })
	}
	wg.Wait()
	for i, n := range got {
		if n != want {
			t.Errorf("goroutine %d: Tokens() = %d, want %d", i, n, want)
		}
	}
	// The count is computed once: growing the description afterwards does
	// not change it.
	tool.Description = strings.Repeat("much longer now ", 50)
	if n := tool.Tokens(); n != want {
		t.Errorf("Tokens() after changing the description = %d, want the cached %d", n, want)
	}
	if n := CountTokens(string(tool.Definition())); n <= want {
		t.Errorf("a longer definition counts %d tokens, not more than %d", n, want)
	}
}

func TestServerTokens(t *testing.T) {
	t.Parallel()
	srv := mustServer(t, "s", `{"name":"a","description":"first"}`, `{"name":"b","description":"second one"}`)
	want := srv.Tools[0].Tokens() + srv.Tools[1].Tokens()
	if got := srv.Tokens(); got != want || got <= 0 {
		t.Errorf("Server.Tokens() = %d, want %d (> 0)", got, want)
	}
	if got := (&Server{Key: "empty"}).Tokens(); got != 0 {
		t.Errorf("empty server Tokens() = %d", got)
	}
}

func TestNewServer(t *testing.T) {
	t.Parallel()
	kw := []string{"k1", "k2"}
	srv, err := NewServer("up", []json.RawMessage{
		json.RawMessage(`{"name":"a"}`),
		json.RawMessage(`{"name":"b","_meta":{"anthropic/alwaysLoad":false}}`),
	}, kw, true)
	if err != nil {
		t.Fatal(err)
	}
	if srv.Key != "up" || len(srv.Tools) != 2 {
		t.Fatalf("got %+v", srv)
	}
	for _, tool := range srv.Tools {
		if !tool.AlwaysLoad {
			t.Errorf("%s: AlwaysLoad false, want the server's true", tool.ID())
		}
		if !reflect.DeepEqual(tool.Keywords, kw) {
			t.Errorf("%s: Keywords = %v, want %v", tool.ID(), tool.Keywords, kw)
		}
	}
	// Each tool has its own keyword slice.
	srv.Tools[0].Keywords[0] = "changed"
	if srv.Tools[1].Keywords[0] != "k1" || kw[0] != "k1" {
		t.Error("tools share their Keywords slice")
	}

	for _, tc := range []struct {
		key  string
		raws []string
		want string
	}{
		{"", nil, "empty"},
		{"a/b", nil, `"/"`},
		{"a__b", nil, `"__"`},
		{"a b", nil, "white space"},
		{"ok", []string{`{"name":"x"}`, `{"name":"x"}`}, `duplicate tool name "x"`},
		{"ok", []string{`{"name":"x"}`, `{}`}, `tools[1]`},
	} {
		var raws []json.RawMessage
		for _, r := range tc.raws {
			raws = append(raws, json.RawMessage(r))
		}
		if _, err := NewServer(tc.key, raws, nil, false); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewServer(%q, %v): error %v, want one containing %q", tc.key, tc.raws, err, tc.want)
		}
	}
}

// mustServer builds a server from raw tool definitions.
func mustServer(t testing.TB, key string, raws ...string) *Server {
	t.Helper()
	rs := make([]json.RawMessage, len(raws))
	for i, r := range raws {
		rs[i] = json.RawMessage(r)
	}
	srv, err := NewServer(key, rs, nil, false)
	if err != nil {
		t.Fatalf("NewServer(%q): %v", key, err)
	}
	return srv
}

// TestToolIDCached checks that ID is "<server>/<name>" for a parsed tool and
// for one written as a literal, that goroutines asking at once all get it
// (-race checks the cache), and that once built it costs no allocation.
func TestToolIDCached(t *testing.T) {
	// Not parallel: AllocsPerRun needs the test alone.
	parsed, err := ParseTool("srv", json.RawMessage(`{"name":"get_file"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tool *Tool
		want string
	}{
		{parsed, "srv/get_file"},
		{&Tool{Server: "a", Name: "b"}, "a/b"},
	} {
		var wg sync.WaitGroup
		got := make([]string, 8)
		for i := range got {
			wg.Go(func() { got[i] = tc.tool.ID() })
		}
		wg.Wait()
		for i, id := range got {
			if id != tc.want {
				t.Errorf("goroutine %d: ID() = %q, want %q", i, id, tc.want)
			}
		}
		if n := testing.AllocsPerRun(10, func() { idSink = tc.tool.ID() }); n != 0 {
			t.Errorf("%s: ID allocates %v times once built, want 0", tc.want, n)
		}
	}
}

// idSink keeps IDs asked for in tests, so that building one allocates.
var idSink string

// TestParseToolOneCopy: a tool's raw members are parts of its Raw (the
// definition is kept once), apart from its caller's bytes, and appending
// to one never changes Raw.
func TestParseToolOneCopy(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		`{"name":"a","inputSchema":{"type":"object","properties":{"x":{"type":"string"}}},"outputSchema":{"type":"object"},"annotations":{"title":"A"},"_meta":{"k":1}}`,
		` { "_meta" : {"k":1} , "name" : "a", "inputSchema" : {"type":"object"} } `,
	} {
		in := []byte(raw)
		tool, err := ParseTool("s", in)
		if err != nil {
			t.Fatal(err)
		}
		for name, part := range map[string]json.RawMessage{"inputSchema": tool.InputSchema, "outputSchema": tool.OutputSchema,
			"annotations": tool.Annotations, "_meta": tool.Meta} {
			if len(part) == 0 {
				continue
			}
			shared := false
			for i := range tool.Raw {
				if &tool.Raw[i] == &part[0] {
					shared = true
				}
			}
			if !shared {
				t.Errorf("%s: %s is a copy apart from Raw", raw, name)
			}
		}
		before := string(tool.Raw)
		_ = append(tool.InputSchema, "junk"...)
		for i := range in {
			in[i] = 'x'
		}
		if string(tool.Raw) != before || string(tool.Raw) != raw {
			t.Errorf("Raw changed to %q", tool.Raw)
		}
		if string(tool.InputSchema) != `{"type":"object","properties":{"x":{"type":"string"}}}` && string(tool.InputSchema) != `{"type":"object"}` {
			t.Errorf("InputSchema %q", tool.InputSchema)
		}
	}
}
