package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/toolsearch/toolsearch/core/discovery"
)

// toolChanges returns the system message that enables the tools in effect
// that nothing in the history enables yet, and withdraws those a
// tool_addition enabled that the catalog has lost; nil when there is
// nothing to say. The API refuses a system message right after an
// assistant message that paused its turn, so none is written after an
// assistant message: the changes wait for the next user message.
func (ts *Toolset) toolChanges(strat Strategy, h *History, active *discovery.Set, sent func(string) bool) (msg json.RawMessage, added, removed []string, inline int) {
	added0 := h.Added()
	var blocks []sdk.BetaSystemMessageParamContentUnion
	for _, n := range active.Names() {
		if added0.Has(n) || h.Referenced.Has(n) {
			continue // enabled already
		}
		i, ok := ts.byName[n]
		if !ok || !ts.tools[i].deferred {
			continue // gone from the catalog, or loaded from the start
		}
		var tool sdk.BetaRequestToolAdditionBlockToolUnionParam
		if strat == Inline && !sent(n) {
			def, err := json.Marshal(ts.definition(ts.tools[i], false))
			if err != nil {
				continue
			}
			// The definition goes out as the tools array would carry it
			// (the SDK's BetaToolUnionParam would re-encode the schema).
			tool.OfToolDefinition = &sdk.BetaToolChangeToolDefinitionParam{Definition: param.Override[sdk.BetaToolUnionParam](json.RawMessage(def))}
			inline++
		} else {
			tool.OfToolReference = &sdk.BetaToolChangeToolReferenceParam{Name: n}
		}
		blocks = append(blocks, sdk.BetaSystemMessageParamContentUnion{OfToolAddition: &sdk.BetaRequestToolAdditionBlockParam{Tool: tool}})
		added = append(added, n)
	}
	for _, n := range added0.Names() {
		if ts.available(n) {
			continue
		}
		blocks = append(blocks, sdk.BetaSystemMessageParamContentUnion{OfToolRemoval: &sdk.BetaRequestToolRemovalBlockParam{
			Tool: sdk.BetaRequestToolRemovalBlockToolUnionParam{OfToolReference: &sdk.BetaToolChangeToolReferenceParam{Name: n}}}})
		removed = append(removed, n)
	}
	if len(blocks) == 0 {
		return nil, nil, nil, 0
	}
	// The message is the SDK's own encoding of a system message of tool
	// changes (the Messages API's beta types), carried in the history as
	// raw JSON.
	b, err := json.Marshal(sdk.BetaMessageParam{OfSystem: &sdk.BetaSystemMessageParam{Content: blocks}})
	if err != nil {
		ts.log.Warn("toolsearch: encoding tool changes", "err", err)
		return nil, nil, nil, 0
	}
	return b, added, removed, inline
}

// available reports whether a wire name is a tool of the catalog that the
// model may use.
func (ts *Toolset) available(name string) bool {
	_, ok := ts.byName[name]
	return ok
}

// hidden reports whether a wire name is a catalog tool the policy hides
// (Config.Visible).
func (ts *Toolset) hidden(name string) bool {
	if _, ok := ts.byName[name]; ok {
		return false
	}
	_, inCatalog := ts.names.Tool(name)
	return inCatalog
}

// MessageSender sends one request of the Messages API: *sdk.MessageService
// (client.Messages) is one.
type MessageSender interface {
	New(ctx context.Context, params sdk.MessageNewParams, opts ...option.RequestOption) (*sdk.Message, error)
}

// Send builds the turn of conv, sends it with the betas it needs, and, when
// the endpoint refuses it with a 400 that names a feature of the strategy
// (ReadRefusal), remembers the downgrade for the endpoint and model in the
// Toolset's Capabilities and sends the turn again, rebuilt for the plainer
// strategy: once per refusal, each retry strictly plainer (so at most three
// times, from Inline to Plain). It returns the answer and the turn that got
// it (on error, the last turn tried).
func (ts *Toolset) Send(ctx context.Context, svc MessageSender, conv *Conversation, base sdk.MessageNewParams, opts ...option.RequestOption) (*sdk.Message, *Turn, error) {
	var first *Turn
	for {
		turn, err := ts.Turn(conv, base)
		if err != nil {
			return nil, turn, err
		}
		if first == nil {
			first = turn
		}
		msg, err := svc.New(ctx, turn.Params, append(append([]option.RequestOption(nil), opts...), turn.Options()...)...)
		if err == nil {
			return msg, turn, nil
		}
		if _, ok := ts.Downgrade(turn, err); !ok {
			if turn.Strategy != first.Strategy {
				return nil, turn, fmt.Errorf("anthropic: %s request (after a downgrade from %s): %w", turn.Strategy, first.Strategy, err)
			}
			return nil, turn, fmt.Errorf("anthropic: %s request: %w", turn.Strategy, err)
		}
	}
}

// Downgrade reads err, the endpoint's answer to turn: when it is a refusal
// of a feature the turn's strategy uses (ReadRefusal), it records the
// plainer strategy for the endpoint and the turn's model and returns it.
// The next Turn for that model uses it. It returns false for any other
// error, or when there is nothing plainer.
func (ts *Toolset) Downgrade(turn *Turn, err error) (Strategy, bool) {
	r, ok := readRefusal(err, turn)
	if !ok || turn == nil || !ts.decision.SearchOn {
		return turn.strategyOrPlain(), false
	}
	model := string(turn.Params.Model)
	if model == "" {
		model = ts.cfg.Model
	}
	why := "the endpoint refused " + r.Feature + ": " + r.Message
	if cur, _ := ts.Strategy(model); cur > turn.Strategy {
		return cur, true // another request lowered it meanwhile
	}
	next, ok := ts.caps.Downgrade(ts.cfg.Endpoint, model, turn.Strategy, r.Below, why)
	if ok && ts.cfg.Model == "" && model != "" {
		// AnswerSearch, which has no request at hand, reads the endpoint's
		// entry without a model.
		ts.caps.Downgrade(ts.cfg.Endpoint, "", turn.Strategy, next, why)
	}
	if ok {
		ts.log.Info("toolsearch: strategy downgraded", "endpoint", ts.cfg.Endpoint, "model", model,
			"from", turn.Strategy.String(), "to", next.String(), "refused", r.Feature)
	}
	return next, ok
}

func (t *Turn) strategyOrPlain() Strategy {
	if t == nil {
		return Plain
	}
	return t.Strategy
}

// Gone reports whether a tool_use names a tool the catalog has lost (not a
// built-in, not the search tool, not a tool the policy hides: that one is
// unknown, and Resolve refuses it), such as one Turn kept in tools because
// a reference in the history names it.
func (ts *Toolset) Gone(name string) bool {
	if name == ts.searchName || ts.hidden(name) {
		return false
	}
	_, ok := ts.byName[name]
	return !ok
}

// GoneResult answers a call of a tool the catalog has lost with an error
// the model can act on: the tool is kept so that the conversation stays
// valid, but its server is gone.
func (ts *Toolset) GoneResult(toolUseID, name string) sdk.ContentBlockParamUnion {
	server := strings.TrimPrefix(name, ts.names.Prefix())
	if s, _, ok := strings.Cut(server, "__"); ok {
		server = s
	} else {
		server = ""
	}
	text := fmt.Sprintf("The tool %s is no longer available", name)
	if server != "" {
		text += fmt.Sprintf(": its server %q is gone from the catalog (disconnected or removed)", server)
	}
	text += ". Search for another tool that does the job."
	tr := sdk.ToolResultBlockParam{ToolUseID: toolUseID, IsError: param.NewOpt(true),
		Content: []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: text}}}}
	return sdk.ContentBlockParamUnion{OfToolResult: &tr}
}
