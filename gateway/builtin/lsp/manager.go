package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/toolsearch/toolsearch/gateway/builtin/files"
)

// ServerConfig is how to start the language server of one language.
type ServerConfig struct {
	Command    string
	Args       []string
	Extensions []string // file extensions with the dot: ".go"
	LanguageID string   // LSP language id; default: the language name
}

// Options configure a Manager.
type Options struct {
	// Timeout bounds one operation, a server's start included (default
	// 60s).
	Timeout time.Duration
	Logger  *slog.Logger
}

// Operations of the lsp tool.
const (
	OpDefinition       = "definition"
	OpReferences       = "references"
	OpHover            = "hover"
	OpDocumentSymbols  = "document_symbols"
	OpWorkspaceSymbols = "workspace_symbols"
	OpIncomingCalls    = "incoming_calls"
	OpOutgoingCalls    = "outgoing_calls"
)

// Args are the arguments of the lsp tool.
type Args struct {
	Operation string `json:"operation"`
	Path      string `json:"path,omitempty"`
	Line      int    `json:"line,omitempty"`
	Column    int    `json:"column,omitempty"`
	Query     string `json:"query,omitempty"`
	Language  string `json:"language,omitempty"`
}

// maxItems bounds the items one answer lists; maxWorkspaceSymbols the
// symbols of a workspace search, whose matches are fuzzy.
const (
	maxItems            = 200
	maxWorkspaceSymbols = 50
)

// Manager starts language servers on demand, one per language and root,
// and keeps them. It is safe for concurrent use.
type Manager struct {
	servers map[string]ServerConfig
	opts    Options

	mu      sync.Mutex
	running map[string]*server // by language + "\x00" + root
	closed  bool
}

// server is a started and initialised language server with its open
// documents.
type server struct {
	lang  string
	root  string
	c     *conn
	ready chan struct{} // closed when initialise has finished
	err   error         // initialise's error

	docMu sync.Mutex
	docs  map[string]docState // by URI
}

type docState struct {
	version int
	mod     time.Time
	size    int64
}

// NewManager makes a Manager for the given servers by language.
func NewManager(servers map[string]ServerConfig, opts Options) *Manager {
	if opts.Timeout <= 0 {
		opts.Timeout = 60 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Manager{servers: servers, opts: opts, running: map[string]*server{}}
}

// Languages returns the configured languages, sorted.
func (m *Manager) Languages() []string {
	out := make([]string, 0, len(m.servers))
	for k := range m.servers {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Close stops every server.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	all := make([]*server, 0, len(m.running))
	for _, s := range m.running {
		all = append(all, s)
	}
	m.running = map[string]*server{}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.c.close()
		}()
	}
	wg.Wait()
}

// languageOf returns the language whose extensions include path's.
func (m *Manager) languageOf(path string) (string, error) {
	ext := strings.ToLower(filepath.Ext(path))
	for _, lang := range m.Languages() {
		for _, e := range m.servers[lang].Extensions {
			if strings.ToLower(e) == ext {
				return lang, nil
			}
		}
	}
	return "", fmt.Errorf("no language server is configured for %s files (configured: %s)", ext, strings.Join(m.Languages(), ", "))
}

// get returns the running server for lang and root, starting it when it
// is not running or has died.
func (m *Manager) get(ctx context.Context, lang, root string) (*server, error) {
	key := lang + "\x00" + root
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, errors.New("the language servers are shut down")
	}
	s := m.running[key]
	if s != nil {
		select {
		case <-s.ready:
			if s.err != nil || s.c.dead() != nil {
				// It failed or died: start a new one now.
				delete(m.running, key)
				s = nil
			}
		default:
		}
	}
	if s == nil {
		cfg := m.servers[lang]
		name := fmt.Sprintf("%s (%s)", filepath.Base(cfg.Command), lang)
		c, err := start(name, cfg.Command, cfg.Args, root, m.opts.Logger)
		if err != nil {
			m.mu.Unlock()
			return nil, err
		}
		s = &server{lang: lang, root: root, c: c, ready: make(chan struct{}), docs: map[string]docState{}}
		m.running[key] = s
		m.opts.Logger.Info("language server started", "language", lang, "root", root, "command", cfg.Command)
		go func() {
			ictx, cancel := context.WithTimeout(context.Background(), m.opts.Timeout)
			defer cancel()
			s.err = s.initialize(ictx)
			if s.err != nil {
				go s.c.close()
			}
			close(s.ready)
		}()
	}
	m.mu.Unlock()
	select {
	case <-s.ready:
		if s.err != nil {
			return nil, s.err
		}
		return s, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("language server for %s is still starting: %w", lang, ctx.Err())
	}
}

func fileURI(p string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(p)}).String()
}

func uriPath(u string) (string, error) {
	pu, err := url.Parse(u)
	if err != nil || pu.Scheme != "file" {
		return "", fmt.Errorf("not a file URI: %q", u)
	}
	return filepath.FromSlash(pu.Path), nil
}

func (s *server) initialize(ctx context.Context) error {
	rootURI := fileURI(s.root)
	params := map[string]any{
		"processId":        os.Getpid(),
		"clientInfo":       map[string]any{"name": "toolsearch"},
		"rootUri":          rootURI,
		"rootPath":         s.root,
		"workspaceFolders": []any{map[string]any{"uri": rootURI, "name": filepath.Base(s.root)}},
		"capabilities": map[string]any{
			"workspace": map[string]any{"workspaceFolders": true, "configuration": true,
				"symbol": map[string]any{"dynamicRegistration": false}},
			"textDocument": map[string]any{
				"synchronization": map[string]any{"dynamicRegistration": false},
				"hover":           map[string]any{"contentFormat": []string{"markdown", "plaintext"}},
				"definition":      map[string]any{"linkSupport": true},
				"references":      map[string]any{},
				"documentSymbol":  map[string]any{"hierarchicalDocumentSymbolSupport": true},
				"callHierarchy":   map[string]any{},
			},
			"window": map[string]any{"workDoneProgress": false},
		},
	}
	if err := s.c.call(ctx, "initialize", params, nil); err != nil {
		return fmt.Errorf("initialising %s: %w", s.c.name, err)
	}
	return s.c.notify("initialized", map[string]any{})
}

// maxFileBytes bounds a file sent to a language server or read to show
// lines.
const maxFileBytes = 16 << 20

// open makes sure the server has the current text of path, read through
// roots.
func (s *server) open(roots files.Roots, path string, languageID string) (string, []byte, error) {
	data, mod, err := roots.ReadFile(path, maxFileBytes)
	if err != nil {
		return "", nil, err
	}
	size := int64(len(data))
	uri := fileURI(path)
	s.docMu.Lock()
	defer s.docMu.Unlock()
	st, ok := s.docs[uri]
	switch {
	case !ok:
		err = s.c.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{
			"uri": uri, "languageId": languageID, "version": 1, "text": string(data)}})
		st = docState{version: 1}
	case !st.mod.Equal(mod) || st.size != size:
		st.version++
		err = s.c.notify("textDocument/didChange", map[string]any{
			"textDocument":   map[string]any{"uri": uri, "version": st.version},
			"contentChanges": []any{map[string]any{"text": string(data)}}})
	}
	if err != nil {
		return "", nil, err
	}
	st.mod, st.size = mod, size
	s.docs[uri] = st
	return uri, data, nil
}

// utf16Col converts a 1-based column in characters on line (1-based) of
// data into LSP's 0-based UTF-16 offset. Columns past the end of the line
// are clamped to it.
func utf16Col(data []byte, line, col int) (int, error) {
	lines := strings.Split(string(data), "\n")
	if line < 1 || line > len(lines) {
		return 0, fmt.Errorf("line %d is out of range (the file has %d lines)", line, len(lines))
	}
	text := lines[line-1]
	n := 0
	for _, r := range text {
		if col <= 1 {
			break
		}
		col--
		n += len(utf16.Encode([]rune{r}))
	}
	return n, nil
}

// charCol converts LSP's 0-based UTF-16 character offset on a line into a
// 1-based column in characters.
func charCol(lineText string, utf16Off int) int {
	col, n := 1, 0
	for _, r := range lineText {
		if n >= utf16Off {
			break
		}
		n += len(utf16.Encode([]rune{r}))
		col++
	}
	return col
}

// Do runs one operation. roots confine every path the caller gives.
func (m *Manager) Do(ctx context.Context, roots files.Roots, a Args) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, m.opts.Timeout)
	defer cancel()
	op := strings.TrimSpace(a.Operation)
	switch op {
	case OpDefinition, OpReferences, OpHover, OpDocumentSymbols, OpIncomingCalls, OpOutgoingCalls, OpWorkspaceSymbols:
	default:
		return "", fmt.Errorf("lsp: unknown operation %q (want definition, references, hover, document_symbols, workspace_symbols, incoming_calls or outgoing_calls)", a.Operation)
	}
	r := &render{roots: roots, files: map[string][]string{}}
	if op == OpWorkspaceSymbols {
		if strings.TrimSpace(a.Query) == "" {
			return "", errors.New("lsp: workspace_symbols needs a query")
		}
		lang := a.Language
		root := ""
		if a.Path != "" {
			p, err := roots.Resolve(a.Path)
			if err != nil {
				return "", fmt.Errorf("lsp: %w", err)
			}
			root, _ = roots.Root(p)
			if lang == "" {
				if l, err := m.languageOf(p); err == nil {
					lang = l
				}
			}
		}
		if root == "" {
			dirs := roots.Dirs()
			if len(dirs) == 0 {
				return "", fmt.Errorf("lsp: %w", files.ErrNoRoots)
			}
			root = dirs[0]
		}
		if lang == "" {
			langs := m.Languages()
			if len(langs) != 1 {
				return "", fmt.Errorf("lsp: several language servers are configured (%s): give language", strings.Join(langs, ", "))
			}
			lang = langs[0]
		}
		if _, ok := m.servers[lang]; !ok {
			return "", fmt.Errorf("lsp: no language server is configured for %q (configured: %s)", lang, strings.Join(m.Languages(), ", "))
		}
		s, err := m.get(ctx, lang, root)
		if err != nil {
			return "", fmt.Errorf("lsp: %w", err)
		}
		var raw json.RawMessage
		if err := s.c.call(ctx, "workspace/symbol", map[string]any{"query": a.Query}, &raw); err != nil {
			return "", m.callErr(s, err)
		}
		return r.symbols(raw, "")
	}
	if strings.TrimSpace(a.Path) == "" {
		return "", fmt.Errorf("lsp: %s needs path", op)
	}
	p, err := roots.Resolve(a.Path)
	if err != nil {
		return "", fmt.Errorf("lsp: %w", err)
	}
	lang, err := m.languageOf(p)
	if err != nil {
		return "", fmt.Errorf("lsp: %w", err)
	}
	root, _ := roots.Root(p)
	s, err := m.get(ctx, lang, root)
	if err != nil {
		return "", fmt.Errorf("lsp: %w", err)
	}
	langID := m.servers[lang].LanguageID
	if langID == "" {
		langID = lang
	}
	uri, data, err := s.open(roots, p, langID)
	if err != nil {
		return "", m.callErr(s, err)
	}
	r.files[p] = strings.Split(string(data), "\n")
	doc := map[string]any{"uri": uri}
	if op == OpDocumentSymbols {
		var raw json.RawMessage
		if err := s.c.call(ctx, "textDocument/documentSymbol", map[string]any{"textDocument": doc}, &raw); err != nil {
			return "", m.callErr(s, err)
		}
		return r.symbols(raw, p)
	}
	if a.Line < 1 || a.Column < 1 {
		return "", fmt.Errorf("lsp: %s needs line and column (1-based)", op)
	}
	ch, err := utf16Col(data, a.Line, a.Column)
	if err != nil {
		return "", fmt.Errorf("lsp: %s: %w", r.roots.Display(p), err)
	}
	pos := map[string]any{"textDocument": doc, "position": map[string]any{"line": a.Line - 1, "character": ch}}
	var raw json.RawMessage
	switch op {
	case OpDefinition:
		if err := s.c.call(ctx, "textDocument/definition", pos, &raw); err != nil {
			return "", m.callErr(s, err)
		}
		return r.locations(raw, "definition")
	case OpReferences:
		pos["context"] = map[string]any{"includeDeclaration": true}
		if err := s.c.call(ctx, "textDocument/references", pos, &raw); err != nil {
			return "", m.callErr(s, err)
		}
		return r.locations(raw, "reference")
	case OpHover:
		if err := s.c.call(ctx, "textDocument/hover", pos, &raw); err != nil {
			return "", m.callErr(s, err)
		}
		return hoverText(raw)
	}
	// Call hierarchy.
	var items []json.RawMessage
	if err := s.c.call(ctx, "textDocument/prepareCallHierarchy", pos, &items); err != nil {
		return "", m.callErr(s, err)
	}
	if len(items) == 0 {
		return "No function or method at that position.", nil
	}
	method := "callHierarchy/incomingCalls"
	if op == OpOutgoingCalls {
		method = "callHierarchy/outgoingCalls"
	}
	var out []string
	for _, it := range items {
		var calls json.RawMessage
		if err := s.c.call(ctx, method, map[string]any{"item": it}, &calls); err != nil {
			return "", m.callErr(s, err)
		}
		text, err := r.calls(calls, op == OpIncomingCalls)
		if err != nil {
			return "", err
		}
		out = append(out, text)
	}
	return strings.Join(out, "\n"), nil
}

// callErr describes a failed call, saying when the server died.
func (m *Manager) callErr(s *server, err error) error {
	if d := s.c.dead(); d != nil {
		return fmt.Errorf("lsp: %v; it will be restarted on the next call", d)
	}
	return fmt.Errorf("lsp: %w", err)
}

// render turns LSP answers into text, reading files to show lines.
type render struct {
	roots files.Roots
	files map[string][]string
}

func (r *render) inRoots(p string) bool {
	_, ok := r.roots.Root(p)
	return ok
}

func (r *render) lines(p string) []string {
	if l, ok := r.files[p]; ok {
		return l
	}
	var l []string
	if _, ok := r.roots.Root(p); ok {
		// Read through the roots: a link on the way must not lead out.
		if data, _, err := r.roots.ReadFile(p, maxFileBytes); err == nil && utf8.Valid(data) {
			l = strings.Split(string(data), "\n")
		}
	}
	r.files[p] = l
	return l
}

type lspRange struct {
	Start struct {
		Line      int `json:"line"`
		Character int `json:"character"`
	} `json:"start"`
}

// place renders "path:line:column" for a URI and range start, and the
// line's text when it is known.
func (r *render) place(uri string, rg lspRange) (string, string) {
	p, err := uriPath(uri)
	if err != nil {
		return uri, ""
	}
	line := rg.Start.Line + 1
	col := rg.Start.Character + 1
	text := ""
	if ls := r.lines(p); rg.Start.Line >= 0 && rg.Start.Line < len(ls) {
		text = strings.TrimSpace(strings.TrimSuffix(ls[rg.Start.Line], "\r"))
		col = charCol(ls[rg.Start.Line], rg.Start.Character)
		if len(text) > 200 {
			text = text[:200] + "…"
		}
	}
	return fmt.Sprintf("%s:%d:%d", r.roots.Display(p), line, col), text
}

func (r *render) locations(raw json.RawMessage, what string) (string, error) {
	type loc struct {
		URI            string   `json:"uri"`
		Range          lspRange `json:"range"`
		TargetURI      string   `json:"targetUri"`
		TargetSelRange lspRange `json:"targetSelectionRange"`
	}
	var list []loc
	if len(raw) == 0 || string(raw) == "null" {
		return fmt.Sprintf("No %s found.", what), nil
	}
	if raw[0] == '{' {
		var one loc
		if err := json.Unmarshal(raw, &one); err != nil {
			return "", fmt.Errorf("lsp: unexpected answer: %w", err)
		}
		list = []loc{one}
	} else if err := json.Unmarshal(raw, &list); err != nil {
		return "", fmt.Errorf("lsp: unexpected answer: %w", err)
	}
	if len(list) == 0 {
		return fmt.Sprintf("No %s found.", what), nil
	}
	var b strings.Builder
	for i, l := range list {
		if i == maxItems {
			fmt.Fprintf(&b, "(%d more)\n", len(list)-maxItems)
			break
		}
		uri, rg := l.URI, l.Range
		if l.TargetURI != "" {
			uri, rg = l.TargetURI, l.TargetSelRange
		}
		pl, text := r.place(uri, rg)
		if text != "" {
			fmt.Fprintf(&b, "%s: %s\n", pl, text)
		} else {
			fmt.Fprintf(&b, "%s\n", pl)
		}
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func hoverText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "No information at that position.", nil
	}
	var h struct {
		Contents json.RawMessage `json:"contents"`
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return "", fmt.Errorf("lsp: unexpected hover answer: %w", err)
	}
	var parts []string
	var add func(json.RawMessage)
	add = func(c json.RawMessage) {
		var s string
		if json.Unmarshal(c, &s) == nil {
			parts = append(parts, s)
			return
		}
		var mc struct {
			Kind     string `json:"kind"`
			Language string `json:"language"`
			Value    string `json:"value"`
		}
		if json.Unmarshal(c, &mc) == nil && mc.Value != "" {
			if mc.Language != "" {
				parts = append(parts, "```"+mc.Language+"\n"+mc.Value+"\n```")
			} else {
				parts = append(parts, mc.Value)
			}
			return
		}
		var list []json.RawMessage
		if json.Unmarshal(c, &list) == nil {
			for _, x := range list {
				add(x)
			}
		}
	}
	add(h.Contents)
	text := strings.TrimSpace(strings.Join(parts, "\n\n"))
	if text == "" {
		return "No information at that position.", nil
	}
	return text, nil
}

// symbolKinds names LSP's SymbolKind numbers.
var symbolKinds = []string{"", "file", "module", "namespace", "package", "class", "method", "property", "field",
	"constructor", "enum", "interface", "function", "variable", "constant", "string", "number", "boolean", "array",
	"object", "key", "null", "enum member", "struct", "event", "operator", "type parameter"}

func kindName(k int) string {
	if k > 0 && k < len(symbolKinds) {
		return symbolKinds[k]
	}
	return "symbol"
}

// symbols renders DocumentSymbol trees or SymbolInformation lists. file is
// the document's path for DocumentSymbol, which carries no URI.
func (r *render) symbols(raw json.RawMessage, file string) (string, error) {
	type docSym struct {
		Name           string          `json:"name"`
		Detail         string          `json:"detail"`
		Kind           int             `json:"kind"`
		SelectionRange *lspRange       `json:"selectionRange"`
		Children       json.RawMessage `json:"children"`
		Location       *struct {
			URI   string   `json:"uri"`
			Range lspRange `json:"range"`
		} `json:"location"`
		ContainerName string `json:"containerName"`
	}
	var b strings.Builder
	n, outside := 0, 0
	limit := maxItems
	if file == "" {
		limit = maxWorkspaceSymbols
	}
	var walk func(json.RawMessage, int) error
	walk = func(raw json.RawMessage, depth int) error {
		if len(raw) == 0 || string(raw) == "null" {
			return nil
		}
		var list []docSym
		if err := json.Unmarshal(raw, &list); err != nil {
			return fmt.Errorf("lsp: unexpected symbols answer: %w", err)
		}
		for _, s := range list {
			if file == "" && s.Location != nil {
				// Workspace symbols: only those inside the roots (servers
				// also answer from dependencies and the standard library).
				if p, err := uriPath(s.Location.URI); err != nil || !r.inRoots(p) {
					outside++
					continue
				}
			}
			n++
			if n > limit {
				continue
			}
			var pl string
			switch {
			case s.Location != nil:
				pl, _ = r.place(s.Location.URI, s.Location.Range)
			case s.SelectionRange != nil && file != "":
				pl, _ = r.place(fileURI(file), *s.SelectionRange)
			}
			fmt.Fprintf(&b, "%s%s %s", strings.Repeat("  ", depth), kindName(s.Kind), s.Name)
			if s.Detail != "" {
				fmt.Fprintf(&b, " %s", firstLine(s.Detail))
			}
			if s.ContainerName != "" {
				fmt.Fprintf(&b, " (in %s)", s.ContainerName)
			}
			if pl != "" {
				fmt.Fprintf(&b, " — %s", pl)
			}
			b.WriteByte('\n')
			if err := walk(s.Children, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(raw, 0); err != nil {
		return "", err
	}
	if n == 0 {
		if outside > 0 {
			return fmt.Sprintf("No symbols found inside the roots (%d outside them, in dependencies or the standard library).", outside), nil
		}
		return "No symbols found.", nil
	}
	if n > limit {
		fmt.Fprintf(&b, "(%d more; give a more precise query)\n", n-limit)
	}
	if outside > 0 {
		fmt.Fprintf(&b, "(%d more outside the roots not shown)\n", outside)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// calls renders incoming (from) or outgoing (to) calls.
func (r *render) calls(raw json.RawMessage, incoming bool) (string, error) {
	type item struct {
		Name           string   `json:"name"`
		Kind           int      `json:"kind"`
		Detail         string   `json:"detail"`
		URI            string   `json:"uri"`
		SelectionRange lspRange `json:"selectionRange"`
	}
	var list []struct {
		From       *item      `json:"from"`
		To         *item      `json:"to"`
		FromRanges []lspRange `json:"fromRanges"`
	}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &list); err != nil {
			return "", fmt.Errorf("lsp: unexpected call hierarchy answer: %w", err)
		}
	}
	if len(list) == 0 {
		if incoming {
			return "No callers found.", nil
		}
		return "No calls found.", nil
	}
	var b strings.Builder
	if incoming {
		b.WriteString("Called from:\n")
	} else {
		b.WriteString("Calls:\n")
	}
	for i, c := range list {
		if i == maxItems {
			fmt.Fprintf(&b, "(%d more)\n", len(list)-maxItems)
			break
		}
		it := c.To
		if incoming {
			it = c.From
		}
		if it == nil {
			continue
		}
		pl, _ := r.place(it.URI, it.SelectionRange)
		fmt.Fprintf(&b, "%s %s — %s", kindName(it.Kind), it.Name, pl)
		if incoming && len(c.FromRanges) > 0 && it.URI != "" {
			var at []string
			for _, fr := range c.FromRanges {
				at = append(at, fmt.Sprint(fr.Start.Line+1))
			}
			fmt.Fprintf(&b, " (call on line %s)", strings.Join(at, ", "))
		}
		b.WriteByte('\n')
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}
