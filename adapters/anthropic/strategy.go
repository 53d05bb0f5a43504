package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/toolsearch/toolsearch/adapters/messages"
)

// Strategy is how the tools a search discovers reach the model (see
// messages.Strategy for the four, from the richest to the plainest:
// Inline, ReferenceAdd, Classic, Plain).
//
// A tool a catalog change removed is withdrawn with a tool_removal block
// under Inline and ReferenceAdd; under Classic its last definition stays in
// tools as long as a reference in the history names it.
type Strategy = messages.Strategy

// Strategies. StrategyAuto chooses one per endpoint and model (see
// Toolset.Strategy).
const (
	StrategyAuto = messages.StrategyAuto
	Inline       = messages.Inline
	ReferenceAdd = messages.ReferenceAdd
	Classic      = messages.Classic
	Plain        = messages.Plain
)

// Betas of the mid-conversation tool changes, as the SDK names them.
const (
	BetaToolChanges = string(sdk.AnthropicBetaMidConversationToolChanges2026_07_01)
	BetaInlineTools = string(sdk.AnthropicBetaInlineTools2026_09_15)
)

// ParseStrategy reads "auto", "inline", "reference-add", "classic" or
// "plain".
func ParseStrategy(s string) (Strategy, error) { return messages.ParseStrategy(s) }

// Capabilities remembers, for one session, which strategy each endpoint and
// model took after a downgrade, so that a refused feature is tried once
// only. The zero value is ready; it is safe for concurrent use. Share one
// between the Toolsets of a session (a Toolset is rebuilt on every catalog
// change; the memory must outlive it).
type Capabilities struct {
	mu sync.Mutex
	m  map[capKey]capEntry
}

type capKey struct{ endpoint, model string }

type capEntry struct {
	s   Strategy
	why string
}

// Get returns the strategy remembered for an endpoint and model, and why.
func (c *Capabilities) Get(endpoint, model string) (Strategy, string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[capKey{endpoint, model}]
	return e.s, e.why, ok
}

// Downgrade records that the endpoint and model refused strategy from, for
// the reason given, and returns the strategy to use now: to when it is
// plainer than from, else the one after from. It never raises a remembered
// strategy (a late report of an older failure keeps the plainer one). ok is
// false when there is nothing plainer than from.
func (c *Capabilities) Downgrade(endpoint, model string, from, to Strategy, why string) (Strategy, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[capKey]capEntry{}
	}
	k := capKey{endpoint, model}
	if cur, ok := c.m[k]; ok && cur.s > from {
		return cur.s, true // already plainer
	}
	if to <= from {
		next, ok := from.Next()
		if !ok {
			return from, false
		}
		to = next
	}
	c.m[k] = capEntry{s: to, why: fmt.Sprintf("downgraded from %s: %s", from, why)}
	return to, true
}

// Refusal is what a 400 says the endpoint does not take (see
// messages.Refusal).
type Refusal = messages.Refusal

// ReadRefusal recognises a 400 (or 422) that names a block type, tool
// type, role, field or beta the endpoint does not take, and says which
// strategy does without it. When err is the SDK's *sdk.Error, the error is
// read against the request it answered (its body and anthropic-beta
// header as sent; see messages.RefusalTo): a name counts only when that
// request used it, however the endpoint words it. Any other error is read
// by its text alone, as RefusalOf does. Other errors (a bad schema, rate
// limits, an unknown tool reference: a bug, not a capability) give false.
func ReadRefusal(err error) (Refusal, bool) { return readRefusal(err, nil) }

// RefusalTo reads err against the request it answered: sent is the
// request body and betas its anthropic-beta values. It is ReadRefusal for
// a caller that sends requests by other means than the SDK.
func RefusalTo(err error, sent []byte, betas []string) (Refusal, bool) {
	if err == nil {
		return Refusal{}, false
	}
	msg, ok := errorBody(err)
	if !ok {
		return Refusal{}, false
	}
	return refused(messages.RefusalTo([]byte(msg), sent, betas))
}

// readRefusal reads err against the request the SDK sent, or else against
// turn (its params and betas) when there is one.
func readRefusal(err error, turn *Turn) (Refusal, bool) {
	if err == nil {
		return Refusal{}, false
	}
	msg, ok := errorBody(err)
	if !ok {
		return Refusal{}, false
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		if sent, ok := sentBody(apiErr.Request); ok {
			return refused(messages.RefusalTo([]byte(msg), sent, apiErr.Request.Header.Values("anthropic-beta")))
		}
	}
	if turn != nil {
		if sent, err := json.Marshal(turn.Params); err == nil {
			return refused(messages.RefusalTo([]byte(msg), sent, turn.Betas))
		}
	}
	//lint:ignore SA1019 without the request, the text is all there is to read.
	return messages.RefusalOf(msg)
}

// errorBody is the endpoint's answer in err: the raw body of an SDK error
// (false when its status is not a refusal's), or else the error's text.
func errorBody(err error) (string, bool) {
	msg := err.Error()
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		if apiErr.StatusCode != http.StatusBadRequest && apiErr.StatusCode != http.StatusUnprocessableEntity {
			return "", false
		}
		if raw := strings.TrimSpace(apiErr.RawJSON()); raw != "" {
			msg = raw
		}
	}
	return msg, true
}

// maxSentBody bounds the request body read back to read a refusal against.
const maxSentBody = 32 << 20

// sentBody is the body of a request the SDK sent, read again from
// GetBody, and false when it cannot be.
func sentBody(req *http.Request) ([]byte, bool) {
	if req == nil || req.GetBody == nil {
		return nil, false
	}
	rc, err := req.GetBody()
	if err != nil {
		return nil, false
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxSentBody))
	return b, err == nil && len(b) > 0
}

// refused is a reading as a Refusal: true when it names a feature a
// plainer strategy drops.
func refused(r messages.Reading) (Refusal, bool) {
	if !r.Refused() {
		return Refusal{}, false
	}
	return r.Refusal, true
}

// RefusalOf reads the message of a 400 (its body or its error text)
// without the request it answered; see messages.RefusalOf.
//
// Deprecated: use ReadRefusal with the SDK's error, or RefusalTo with the
// request sent: a name counts only when the request used it.
func RefusalOf(msg string) (Refusal, bool) {
	return messages.RefusalOf(msg)
}

// chooseStrategy is the strategy before any downgrade, and why.
func (ts *Toolset) chooseStrategy(model string) (Strategy, string) {
	switch {
	case !ts.decision.SearchOn:
		return Classic, "tool search is off: every tool is sent in tools"
	case ts.cfg.Wire == Expand:
		return Plain, "the endpoint takes no tool references (Wire Expand)"
	case ts.cfg.Search != ClientSearch:
		return Classic, "the API's own search (" + ts.cfg.Search.String() + ") answers with tool_reference blocks"
	case ts.cfg.Strategy != StrategyAuto:
		return ts.cfg.Strategy, "configured"
	}
	if m := strings.ToLower(model); strings.HasPrefix(m, "claude-2") || strings.HasPrefix(m, "claude-3") || strings.HasPrefix(m, "claude-instant") {
		return Plain, "model " + model + " predates tool search"
	}
	if !isAnthropicAPI(ts.cfg.Endpoint) {
		return Classic, "the endpoint is not Anthropic's API: start with tool_reference, which works wherever tool search does"
	}
	return Inline, "Anthropic's API: discovered definitions are added inline in system messages"
}

// isAnthropicAPI reports whether an endpoint base URL is Anthropic's own
// API ("" is the SDK's default, which is).
func isAnthropicAPI(endpoint string) bool {
	if endpoint == "" {
		return true
	}
	u, err := url.Parse(endpoint)
	return err == nil && strings.EqualFold(u.Hostname(), "api.anthropic.com")
}

// Strategy returns the strategy in force for a model on the Toolset's
// endpoint (Config.Endpoint), and why: the remembered downgrade if there is
// one, else the configured or chosen strategy. "" means Config.Model.
func (ts *Toolset) Strategy(model string) (Strategy, string) {
	if model == "" {
		model = ts.cfg.Model
	}
	s, why := ts.chooseStrategy(model)
	if r, rwhy, ok := ts.caps.Get(ts.cfg.Endpoint, model); ok && r > s {
		return r, rwhy
	}
	return s, why
}
