package proxy

import (
	"bytes"
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/toolsearch/toolsearch/internal/utf8cut"
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
// Unknown probes), and a lower level the upstream took after it refused a
// request (a 400 that readRefusal reads) lowers it. A refusal alone lowers
// nothing for later requests.
//
// Model names come from requests, so the memory is bounded: names are
// keyed by modelKey (at most maxModelName bytes and a digest), and at most
// maxModels are remembered, the least recently used forgotten first (a
// forgotten model probes again: one refused request more).
type levels struct {
	start level
	why   string

	mu  sync.Mutex
	m   map[string]*list.Element // of *levelEntry
	lru list.List                // most recently used first
}

type levelEntry struct {
	model string
	l     level
	why   string
}

// maxModels bounds the models levels remembers.
const maxModels = 256

// newLevels returns the memory of a proxy; only emulate mode reads it.
func newLevels(cfg Config) *levels {
	ls := &levels{m: map[string]*list.Element{}}
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

// entry is the model's entry, marked as used; nil when there is none.
// ls.mu is held.
func (ls *levels) entry(model string) *levelEntry {
	el, ok := ls.m[model]
	if !ok {
		return nil
	}
	ls.lru.MoveToFront(el)
	return el.Value.(*levelEntry)
}

// len is the number of models remembered.
func (ls *levels) len() int {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return len(ls.m)
}

// get returns the level for a model and why.
func (ls *levels) get(model string) (level, string) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if e := ls.entry(model); e != nil {
		return e.l, e.why
	}
	return ls.start, ls.why
}

// next is the level to retry a request at after the upstream refused it
// at level from for something that level d drops, with what the memory
// already holds for the model; false when that is from (the refusal names
// nothing the level still sends: it is then the client's to read). It
// records nothing: a level is remembered only once the upstream takes a
// request sent at it (take).
func (ls *levels) next(model string, from level, d drop) (level, bool) {
	if d == keep {
		return from, false
	}
	next := from.with(d)
	ls.mu.Lock()
	if e := ls.entry(model); e != nil {
		next.noInline = next.noInline || e.l.noInline
		next.fold = next.fold || e.l.fold
		next.emulate = next.emulate || e.l.emulate
	}
	ls.mu.Unlock()
	return next, next != from
}

// take records that the upstream took a request of the model sent at
// level l after it refused the request at a richer one (why says what it
// refused), and returns whether the memory changed. A level only goes
// down: l is merged with what is remembered. Past maxModels models, the
// least recently used is forgotten.
func (ls *levels) take(model string, l level, why string) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if e := ls.entry(model); e != nil {
		l.noInline = l.noInline || e.l.noInline
		l.fold = l.fold || e.l.fold
		l.emulate = l.emulate || e.l.emulate
		if l == e.l {
			return false
		}
		e.l, e.why = l, why
		return true
	}
	if l == ls.start {
		return false
	}
	for len(ls.m) >= maxModels {
		oldest := ls.lru.Back()
		ls.lru.Remove(oldest)
		delete(ls.m, oldest.Value.(*levelEntry).model)
	}
	ls.m[model] = ls.lru.PushFront(&levelEntry{model: model, l: l, why: why})
	return true
}

// maxModelName bounds the bytes of a client's model name the proxy keeps,
// logs and keys its memory by (modelKey).
const maxModelName = 128

// modelKey is a client's model name as the proxy keeps and logs it: the
// name itself when it has at most maxModelName bytes, else its first
// maxModelName bytes cut at a character boundary, "…#" and 16 hex digits
// of its SHA-256, so that two long names stay two keys and none is longer
// than 147 bytes. The request sent upstream keeps the name as it was.
func modelKey(name string) string {
	if len(name) <= maxModelName {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return utf8cut.Prefix(name, maxModelName) + "…#" + hex.EncodeToString(sum[:8])
}

// refusedError is what checkRefusal returns for a refusal worth a retry:
// upstreamError then serves the request again at level next.
type refusedError struct {
	o    *outgoing
	next level
	// pending is what the retry remembers if the upstream takes it.
	pending *pendingLevel
	what    string
}

func (e *refusedError) Error() string { return "the upstream refused " + e.what }

// pendingLevel is a retry at a lower level after a refusal, remembered for
// the model only if the upstream takes it: what names the feature refused
// ("a request naming nothing" when the refusal named nothing the request
// used) and message is the upstream's words. A refusal alone never lowers
// the level for later requests: a client could make the upstream refuse a
// feature its request carries (a malformed tool_reference) for every
// client of the model.
type pendingLevel struct {
	what    string
	message string
}

// maxRetries bounds the retries of one request: one per level below the
// request as sent (inline definitions by reference, system messages
// folded, tool search emulated), so that a request lands if any level
// works. Each retry is strictly lower, so a refusal the lower level cannot
// help ends the retries earlier.
const maxRetries = 3

// maxRefusalBody bounds the error body the proxy reads to recognise a
// refusal.
const maxRefusalBody = 1 << 20

// checkRefusal reads an upstream answer in emulate mode (see refusal.go).
// A 400 (or 422) that names a feature the request used and a lower level
// drops asks for a retry at that level; one that names nothing the request
// used asks for a retry one level lower, where a lower level changes the
// request. Either level is remembered for the model only once the upstream
// takes a request sent at it.
// Nothing has reached the client yet. Any other answer, and the last
// refusal, go to the client unchanged, except a refusal of tool search the
// proxy could not get past: that one becomes a clean 400 naming the
// feature, so that a client that retries without tool search (Claude
// Code) does.
func (p *Proxy) checkRefusal(resp *http.Response) error {
	o, ok := resp.Request.Context().Value(ctxKey{}).(*outgoing)
	if !ok || o.req == nil {
		return nil
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if s := o.pending; s != nil {
			if p.levels.take(o.req.model, o.level, fmt.Sprintf("the upstream refused %s: %s", s.what, s.message)) {
				p.log.Info("proxy: the upstream took the request at a lower level; remembered", "model", o.req.model, "level", o.level.String())
			}
		}
		return nil
	}
	if !refusalStatus(resp.StatusCode) {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxRefusalBody))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	if err != nil {
		return nil
	}
	r := readRefusal(b, o.sent, resp.Request.Header)
	if o.retries < maxRetries {
		if r.drop() != keep {
			if next, lower := p.levels.next(o.req.model, o.level, r.drop()); lower {
				p.log.Info("proxy: the upstream refused a feature; retrying at a lower level", "model", o.req.model,
					"refused", r.Named(), "from", o.level.String(), "to", next.String())
				return &refusedError{o: o, next: next, what: r.Named(), pending: &pendingLevel{what: r.Named(), message: r.Message}}
			}
		} else if !r.Names {
			if next, ok := r.below(o.level); ok {
				p.log.Info("proxy: the upstream refused the request naming nothing it used; retrying one level lower",
					"model", o.req.model, "status", resp.StatusCode, "from", o.level.String(), "to", next.String(), "message", r.Message)
				return &refusedError{o: o, next: next, what: "the request",
					pending: &pendingLevel{what: "a request naming nothing", message: r.Message}}
			}
		}
	}
	if r.drop() == dropEmulate {
		msg := fmt.Sprintf("the upstream refused %s, part of tool search, and the proxy could not send the request without it; "+
			"send it without tool search (no defer_loading tools, no tool_reference blocks): %s", r.Named(), r.Message)
		p.log.Warn("proxy: the upstream refuses tool search and no level helps", "model", o.req.model, "refused", r.Named())
		body := errorBody("invalid_request_error", msg)
		resp.StatusCode, resp.Status = http.StatusBadRequest, "400 Bad Request"
		resp.Header.Set("Content-Type", "application/json")
		resp.Header.Del("Content-Encoding")
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
		resp.ContentLength = int64(len(body))
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	return nil
}
