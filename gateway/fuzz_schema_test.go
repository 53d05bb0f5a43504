package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/gateway/upstream"
)

// plainToolName is the form of tool name that every query form can name
// (MCP's recommended characters).
var plainToolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// FuzzUpstreamTool feeds one tool definition, as an upstream server's
// tools/list carries it, through what the gateway does with it: normalise
// the input schema, publish the server (catalog, index, names), list it to
// a client in full mode, find it by name, validate arguments against its
// schema. Another, ordinary tool of the same server is published with it.
//
// Whatever the definition, nothing panics and the ordinary tool is
// published and listed. A definition the MCP SDK can read is published,
// listed in full mode with its (normalised) input schema unchanged byte for
// byte, and found by its exact name.
func FuzzUpstreamTool(f *testing.F) {
	for _, s := range []string{
		`{"name":"x"}`,
		`{"name":"create_issue","description":"Create an issue.","inputSchema":{"type":"object","properties":{"title":{"type":"string"}},"required":["title"]}}`,
		`{"inputSchema":{"required":["zeta"],"properties":{"zeta":{"type":"string"}},"type":"object"},"name":"odd","_meta":{"zz":1}}`,
		`{"name":"no_type","inputSchema":{"properties":{"a":{"type":"integer","minimum":3}}}}`,
		`{"name":"string_schema","inputSchema":{"type":"string"}}`,
		`{"name":"array_schema","inputSchema":[1]}`,
		`{"name":"null_schema","inputSchema":null}`,
		`{"name":"out","inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"r":{"type":"number"}}}}`,
		`{"name":"out_string","inputSchema":{"type":"object"},"outputSchema":{"type":"string"}}`,
		`{"name":"refs","inputSchema":{"type":"object","$defs":{"a":{"type":"string"}},"properties":{"p":{"$ref":"#/$defs/a"}}}}`,
		`{"name":"badref","inputSchema":{"type":"object","properties":{"p":{"$ref":"#/nowhere"}}}}`,
		`{"name":"draft","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}}`,
		`{"name":"pattern","inputSchema":{"type":"object","properties":{"p":{"type":"string","pattern":"(?<name>x)"}}}}`,
		`{"name":"annotated","annotations":{"title":"T","readOnlyHint":true,"destructiveHint":false},"_meta":{"anthropic/alwaysLoad":true}}`,
		`{"name":"icons","icons":[{"src":"https://example.com/i.png","mimeType":"image/png"}]}`,
		`{"name":"with space"}`,
		`{"name":"a,b"}`,
		`{"name":"search_tools"}`,
		`{"name":"fuzz_good"}`,
		`{"name":"typed","inputSchema":{"type":["object","null"]}}`,
		`{"name":"dup","inputSchema":{"type":"string"},"inputSchema":{"type":"object"}}`,
		`{"name":""}`,
		`{"name":5}`,
		`{"title":"no name"}`,
		`[]`,
		`not json`,
	} {
		f.Add([]byte(s), []byte(`{"title":"t","a":1}`))
	}
	cfg, err := config.Parse("fuzz.json", []byte(`{"mcpServers":{"up":{"type":"http","url":"http://127.0.0.1:1/mcp"}},
		"toolsearch":{"builtins":{"glob":false,"grep":false,"lsp":false,"web_fetch":false,"resources":false}}}`), nil)
	if err != nil {
		f.Fatal(err)
	}
	g, err := New(cfg, Options{})
	if err != nil {
		f.Fatal(err)
	}
	u := g.ups()["up"] // never started: its lists are published by hand
	good := json.RawMessage(`{"name":"fuzz_good","description":"An ordinary tool.","inputSchema":{"type":"object"}}`)
	f.Fuzz(func(t *testing.T, raw, args []byte) {
		norm, changed, normErr := normaliseTool(raw)
		if normErr == nil {
			if !changed && !bytes.Equal(norm, raw) {
				t.Fatalf("normaliseTool changed %q to %q and says it did not", raw, norm)
			}
			// Keys are matched exactly, as MCP spells them ("inputSchema",
			// not "InputSchema", which encoding/json would also take).
			var d, schema map[string]json.RawMessage
			var typ string
			if err := json.Unmarshal(norm, &d); err != nil || json.Unmarshal(d["inputSchema"], &schema) != nil ||
				json.Unmarshal(schema["type"], &typ) != nil || typ != "object" {
				t.Fatalf("normalised %q to %q: the input schema is not of type object (%v)", raw, norm, err)
			}
		}
		var sdkTool mcp.Tool
		sdkReads := json.Unmarshal(raw, &sdkTool) == nil && normErr == nil

		m := &upstream.Manifest{Key: "up", Tools: []json.RawMessage{append(json.RawMessage(nil), raw...), good}}
		if err := g.publish(t.Context(), u, m, true); err != nil {
			t.Fatalf("publishing %q with an ordinary tool failed: %v", raw, err)
		}
		snap := g.Snapshot()
		if _, ok := snap.Tool("up/fuzz_good"); !ok {
			t.Fatalf("the ordinary tool is missing after %q", raw)
		}
		s := g.newSession(config.ExposureFull)
		listed := func(want []byte) bool {
			// A session in full mode lists its catalog version's full
			// list (fulllist.go).
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.full == nil {
				return false
			}
			for _, mt := range s.full.tools {
				if t, ok := s.full.names.byName[mt.Name]; ok && bytes.Equal(t.Raw, want) {
					return true
				}
			}
			return false
		}
		gt, _ := snap.Tool("up/fuzz_good")
		if !listed(gt.Raw) {
			t.Fatalf("the ordinary tool is not listed after %q", raw)
		}
		if !sdkReads {
			return
		}
		var name struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(norm, &name)
		tool, ok := snap.Tool("up/" + name.Name)
		if !ok {
			t.Fatalf("%q was not published", raw)
		}
		if name.Name == "fuzz_good" {
			return // a duplicate of the ordinary tool: the first one stays
		}
		if !bytes.Equal(tool.Raw, norm) {
			t.Fatalf("published %q as %q, normalised %q", raw, tool.Raw, norm)
		}
		if !listed(tool.Raw) {
			t.Fatalf("%q is not listed in full mode", raw)
		}
		mt, err := mcpTool(tool, "x")
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		var listedSchema bytes.Buffer
		enc := json.NewEncoder(&listedSchema)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(mt.InputSchema); err != nil {
			t.Fatalf("%q: the listed input schema: %v", raw, err)
		}
		var want bytes.Buffer
		if len(tool.InputSchema) > 0 && json.Compact(&want, tool.InputSchema) == nil &&
			!bytes.Equal(bytes.TrimSpace(listedSchema.Bytes()), want.Bytes()) {
			t.Fatalf("the listed input schema %s is not the upstream's %s", listedSchema.Bytes(), tool.InputSchema)
		}
		if plainToolName.MatchString(name.Name) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for _, q := range []string{"up/" + name.Name, "select:up__" + name.Name} {
				res, err := g.Search(ctx, q, 5)
				if err != nil || len(res.Hits) == 0 || res.Hits[0].Tool != tool {
					t.Fatalf("search %q: %v, %d hits", q, err, len(res.Hits))
				}
			}
		}
		_ = g.cur.Load().validators.validate(tool, args, g.log)
		_ = g.cur.Load().validators.validate(tool, json.RawMessage(`{}`), g.log)
	})
}
