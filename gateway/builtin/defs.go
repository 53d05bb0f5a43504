package builtin

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Names of the built-in tools, as the catalog knows them (server Key).
const (
	Glob          = "glob"
	Grep          = "grep"
	LSP           = "lsp"
	WebFetch      = "web_fetch"
	WebSearch     = "web_search"
	ListResources = "list_resources"
	ReadResource  = "read_resource"
)

// Key is the catalog server key of the built-in tools: they are named
// builtin__glob, builtin__grep... on the wire.
const Key = "builtin"

// def is one tool's definition as written here.
type def struct {
	name, title, desc string
	schema            string
	annotations       string
}

// The descriptions say what each tool searches and what it does not, so
// that a model picks the right one. glob and grep are always loaded: keep
// them short.
var defs = map[string]def{
	Glob: {
		name: Glob, title: "Find files by name",
		desc: "Find files by path pattern in the workspace roots, newest first. ** spans folders (**/*.go), * stays in one ({a,b} alternatives). " +
			"Matches paths only, not contents (use grep); skips .git and .gitignored files.",
		schema: `{"type":"object","properties":{` +
			`"pattern":{"type":"string","description":"Glob relative to path, e.g. src/**/*.ts"},` +
			`"path":{"type":"string","description":"Folder to search from (default: the root)"},` +
			`"limit":{"type":"integer","minimum":1,"maximum":1000,"description":"Max paths (default 100)"},` +
			`"include_ignored":{"type":"boolean"}},"required":["pattern"]}`,
		annotations: `{"readOnlyHint":true}`,
	},
	Grep: {
		name: Grep, title: "Search file contents",
		desc: "Search file contents in the workspace roots with an RE2 regex (ripgrep-like); skips binary and .gitignored files. " +
			"Finds text, not files by name (use glob) nor code meaning (use lsp).",
		schema: `{"type":"object","properties":{` +
			`"pattern":{"type":"string","description":"RE2 regex"},` +
			`"path":{"type":"string","description":"File or folder (default: the roots)"},` +
			`"glob":{"type":"string","description":"Only files matching, e.g. *.go"},` +
			`"type":{"type":"string","description":"File type: go, py, js, ts, rust, java, md..."},` +
			`"output_mode":{"type":"string","enum":["files_with_matches","content","count"],"description":"content gives path:line:text"},` +
			`"case_insensitive":{"type":"boolean"},` +
			`"multiline":{"type":"boolean","description":"Matches span lines; . matches newline"},` +
			`"context":{"type":"integer","minimum":0,"maximum":20,"description":"Lines around each match (content)"},` +
			`"before":{"type":"integer","minimum":0,"maximum":20},"after":{"type":"integer","minimum":0,"maximum":20},` +
			`"line_numbers":{"type":"boolean","description":"Default true"},` +
			`"head_limit":{"type":"integer","minimum":1,"maximum":5000,"description":"Max output lines or entries (default 200)"},` +
			`"include_ignored":{"type":"boolean"}},"required":["pattern"]}`,
		annotations: `{"readOnlyHint":true}`,
	},
	LSP: {
		name: LSP, title: "Ask a language server",
		desc: "Ask a language server what code means: definition, references, hover (type and docs), document_symbols, workspace_symbols, " +
			"incoming_calls, outgoing_calls. Positions are 1-based line and column; results are root-relative path:line:column. " +
			"Does not search plain text (use grep) nor file names (use glob). Languages: %s.",
		schema: `{"type":"object","properties":{` +
			`"operation":{"type":"string","enum":["definition","references","hover","document_symbols","workspace_symbols","incoming_calls","outgoing_calls"]},` +
			`"path":{"type":"string","description":"The file (all but workspace_symbols)"},` +
			`"line":{"type":"integer","minimum":1,"description":"1-based line of the symbol"},` +
			`"column":{"type":"integer","minimum":1,"description":"1-based column (characters) on that line"},` +
			`"query":{"type":"string","description":"Symbol name for workspace_symbols"},` +
			`"language":{"type":"string","description":"For workspace_symbols when several servers run"}},"required":["operation"]}`,
		annotations: `{"readOnlyHint":true,"openWorldHint":false}`,
	},
	WebFetch: {
		name: WebFetch, title: "Fetch a web page",
		desc: "Fetch one known http(s) URL and return it as Markdown (HTML converted) or text, in pages (call again with offset). " +
			"Does not discover pages: find URLs with web_search. A redirect to another host is reported, not followed.",
		schema: `{"type":"object","properties":{` +
			`"url":{"type":"string","description":"http or https URL"},` +
			`"offset":{"type":"integer","minimum":0,"description":"Character offset of the page to return (default 0)"},` +
			`"max_chars":{"type":"integer","minimum":500,"description":"Page size (default and maximum: the configured page size)"}},"required":["url"]}`,
		annotations: `{"readOnlyHint":true,"openWorldHint":true}`,
	},
	WebSearch: {
		name: WebSearch, title: "Search the web",
		desc: "Search the web for pages you do not know yet; returns title, URL and snippet for each result. " +
			"Read a result with web_fetch. Does not search local files, code, tools or MCP resources.",
		schema: `{"type":"object","properties":{` +
			`"query":{"type":"string"},` +
			`"allowed_domains":{"type":"array","items":{"type":"string"},"description":"Only results from these domains"},` +
			`"blocked_domains":{"type":"array","items":{"type":"string"},"description":"No results from these domains"},` +
			`"max_results":{"type":"integer","minimum":1,"maximum":20,"description":"Default 10"}},"required":["query"]}`,
		annotations: `{"readOnlyHint":true,"openWorldHint":true}`,
	},
	ListResources: {
		name: ListResources, title: "List MCP resources",
		desc: "List the resources (data objects: files, records, documents, schemas) and resource templates that the connected MCP servers offer, " +
			"optionally for one server. Read one with read_resource. These are data, not tools: tool search does not find them.",
		schema: `{"type":"object","properties":{` +
			`"server":{"type":"string","description":"Only this server's resources"}}}`,
		annotations: `{"readOnlyHint":true,"openWorldHint":false}`,
	},
	ReadResource: {
		name: ReadResource, title: "Read an MCP resource",
		desc: "Read one resource of an MCP server by server and URI, as list_resources gives them (or a resource template with its variables filled in). " +
			"Not for files on disk (use grep or glob) nor web pages (use web_fetch).",
		schema: `{"type":"object","properties":{` +
			`"server":{"type":"string","description":"The server that offers the resource"},` +
			`"uri":{"type":"string","description":"The resource's URI"}},"required":["server","uri"]}`,
		annotations: `{"readOnlyHint":true,"openWorldHint":false}`,
	},
}

// definition returns the MCP tool definition of name, with the always-load
// hint in _meta when alwaysLoad is set.
func definition(name string, alwaysLoad bool, descArgs ...any) json.RawMessage {
	d := defs[name]
	desc := d.desc
	if len(descArgs) > 0 {
		desc = fmt.Sprintf(desc, descArgs...)
	}
	m := map[string]any{
		"name":        d.name,
		"title":       d.title,
		"description": desc,
		"inputSchema": json.RawMessage(d.schema),
		"annotations": json.RawMessage(d.annotations),
	}
	if alwaysLoad {
		m["_meta"] = map[string]any{"anthropic/alwaysLoad": true}
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("builtin: definition of %s: %v", name, err)) // the definitions above are constants
	}
	return b
}

func languageList(servers map[string]LanguageServer) string {
	names := make([]string, 0, len(servers))
	for k := range servers {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// Names returns the names of every built-in tool, sorted, whether or not
// the configuration turns it on.
func Names() []string {
	out := make([]string, 0, len(defs))
	for n := range defs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
