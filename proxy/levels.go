package proxy

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/toolsearch/toolsearch/adapters/messages"
)

// level is what emulate mode does to a request for its upstream. The
// levels follow the strategies of package messages, from the richest to the
// plainest; each drops what the one before sent and the upstream refused:
//
//   - as sent (Inline): the request goes as the client sent it;
//   - noInline (ReferenceAdd): a tool_addition holding a whole definition
//     (tool_definition, beta inline-tools-2026-09-15) names the tool by
//     reference instead, and the definition goes in tools with
//     defer_loading;
//   - fold (Classic): the tools that tool_addition blocks enabled go in
//     tools as ordinary tools, and system-role messages inside messages are
//     folded into user text (messages.FoldSystemMessages);
//   - emulate (Plain): tool search is emulated (references as text,
//     discovered tools in full, the server search tools run by the proxy),
//     with system messages folded or not.
//
// A level keeps what the richer ones dropped: once fold is set, noInline no
// longer matters (no tool change is sent at all).
type level struct {
	noInline bool
	fold     bool
	emulate  bool
}

func (l level) String() string {
	var parts []string
	if l.emulate {
		parts = append(parts, "emulate tool search")
	}
	if l.fold {
		parts = append(parts, "fold system messages")
	} else if l.noInline {
		parts = append(parts, "inline tools by reference")
	}
	if len(parts) == 0 {
		return "as sent"
	}
	return strings.Join(parts, ", ")
}

// levels remembers, per model, the level the upstream takes: each starts at
// what the configuration says (Config.ToolSearch, Config.SystemMessages;
// Unknown probes), and a refusal that names a feature (a 400 that
// messages.RefusalOf reads) lowers it for the rest of the proxy's life.
type levels struct {
	start level
	why   string

	mu sync.Mutex
	m  map[string]levelEntry
}

type levelEntry struct {
	l   level
	why string
}

// newLevels returns the memory of a proxy; only emulate mode reads it.
func newLevels(cfg Config) *levels {
	ls := &levels{m: map[string]levelEntry{}}
	ls.start = level{fold: cfg.SystemMessages == Unsupported, emulate: cfg.ToolSearch == Unsupported}
	switch {
	case ls.start.emulate:
		ls.why = "the upstream is configured as not supporting tool search"
	case ls.start.fold:
		ls.why = "the upstream is configured as not taking system messages"
	default:
		ls.why = "probing: requests go as sent until the upstream refuses a feature"
	}
	return ls
}

// get returns the level for a model and why.
func (ls *levels) get(model string) (level, string) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if e, ok := ls.m[model]; ok {
		return e.l, e.why
	}
	return ls.start, ls.why
}

// lower records that the upstream refused what a request sent at level
// from carried, and returns the level to retry at; false when the refusal
// names nothing the level still sends (the refusal is then the client's
// to read).
func (ls *levels) lower(model string, from level, r messages.Refusal) (level, bool) {
	next := from
	switch r.Below {
	case messages.Plain:
		next.emulate = true
	case messages.Classic:
		next.fold = true
	case messages.ReferenceAdd:
		next.noInline = true
	default:
		return from, false
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	cur, ok := ls.m[model]
	if ok {
		next.noInline = next.noInline || cur.l.noInline
		next.fold = next.fold || cur.l.fold
		next.emulate = next.emulate || cur.l.emulate
	}
	if next == from {
		return from, false
	}
	if !ok && len(ls.m) >= maxModels {
		// Model names come from requests: the memory stays bounded, and a
		// model past the bound still gets its retry, only not remembered.
		return next, true
	}
	ls.m[model] = levelEntry{l: next, why: fmt.Sprintf("the upstream refused %s: %s", r.Feature, r.Message)}
	return next, true
}

// maxModels bounds the models levels remembers.
const maxModels = 256

// refusedError is what checkRefusal returns for a refusal worth a retry:
// upstreamError then serves the request again at the lowered level.
type refusedError struct {
	o       *outgoing
	refusal messages.Refusal
}

func (e *refusedError) Error() string { return "the upstream refused " + e.refusal.Feature }

// maxRetries bounds the retries of one request: one per feature a level
// can drop (inline definitions, tool changes and system messages, tool
// search), so that a request lands if any level works: inline refused,
// then reference-add refused, then classic refused, and the fourth try
// goes plain. Each retry is strictly lower, so a refusal the lower level
// cannot help ends the retries earlier.
const maxRetries = 3

// maxRefusalBody bounds the 400 body the proxy reads to recognise a
// refusal.
const maxRefusalBody = 1 << 20

// checkRefusal reads an upstream 400 in emulate mode: when it refuses a
// feature the request carried and retries are left, it records the
// lower level for the model and asks for a retry (nothing has reached the
// client yet). Any other answer goes to the client unchanged.
func (p *Proxy) checkRefusal(resp *http.Response) error {
	o, ok := resp.Request.Context().Value(ctxKey{}).(*outgoing)
	if !ok || o.req == nil || o.retries >= maxRetries || resp.StatusCode != http.StatusBadRequest {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxRefusalBody))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	if err != nil {
		return nil
	}
	r, ok := messages.RefusalOf(string(b))
	if !ok {
		return nil
	}
	next, lowered := p.levels.lower(o.req.model, o.level, r)
	if !lowered {
		return nil
	}
	p.log.Info("proxy: the upstream refused a feature; retrying at a lower level", "model", o.req.model,
		"refused", r.Feature, "from", o.level.String(), "to", next.String())
	return &refusedError{o: o, refusal: r}
}
