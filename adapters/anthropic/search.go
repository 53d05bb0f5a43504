package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/discovery"
	"github.com/toolsearch/toolsearch/core/search"
)

// searchInputSchema is the input schema of the client-side search tool.
// It takes query, queries or both (see search.Index.SearchMany).
const searchInputSchema = `{"type":"object","properties":{` +
	`"query":{"type":"string","description":"What the tool does; or select:name1,name2; or a server prefix such as github__"},` +
	`"queries":{"type":"array","items":{"type":"string"},"maxItems":8,"description":"Several queries, one per need, answered as one list"},` +
	`"max_results":{"type":"integer","minimum":1,"maximum":50,"description":"How many tools to load at most (default 5)"}}}`

// ToolLoadedText is the text block that follows a search answer with
// references in the same user message, as Claude Code sends it.
const ToolLoadedText = "Tool loaded."

// searchTool returns the definition of the search tool.
func (ts *Toolset) searchTool() sdk.ToolUnionParam {
	switch ts.cfg.Search {
	case ServerBM25:
		return sdk.ToolUnionParam{OfToolSearchToolBm25_20251119: &sdk.ToolSearchToolBm25_20251119Param{
			Type: sdk.ToolSearchToolBm25_20251119TypeToolSearchToolBm25_20251119,
		}}
	case ServerRegex:
		return sdk.ToolUnionParam{OfToolSearchToolRegex20251119: &sdk.ToolSearchToolRegex20251119Param{
			Type: sdk.ToolSearchToolRegex20251119TypeToolSearchToolRegex20251119,
		}}
	}
	n := ts.cfg.DescribeServers
	if n <= 0 {
		n = 40
	}
	return sdk.ToolUnionParam{OfTool: &sdk.ToolParam{
		Name:        ts.searchName,
		Description: param.NewOpt(discovery.SearchToolDescription(ts.deferredView(), n)),
		InputSchema: param.Override[sdk.ToolInputSchemaParam](json.RawMessage(searchInputSchema)),
	}}
}

// SearchAnswer is the answer to one call of the client-side search tool.
type SearchAnswer struct {
	// Block is the tool_result to send back.
	Block sdk.ContentBlockParamUnion
	// Loaded are the wire names of the tools the answer loads.
	Loaded []string
	// References is true when the answer holds tool_reference blocks (then
	// ResultsMessage adds ToolLoadedText).
	References bool
	// Result is what the engine found.
	Result search.Result
}

// searchInput is the input of the client-side search tool.
type searchInput struct {
	Query      string   `json:"query"`
	Queries    []string `json:"queries"`
	MaxResults int      `json:"max_results"`
}

// asked lists the queries of the input, for messages.
func (in searchInput) asked() []string { return append([]string{in.Query}, in.Queries...) }

// AnswerSearch answers a call of the client-side search tool, whose input
// has a query, queries (one per need) or both, answered as one merged list
// (search.Index.SearchMany): a tool_result
// whose content is the tool_reference blocks of the tools found (under
// Classic; as text, LoadedText, under the other strategies, the next Turn
// enabling them with a tool_addition or sending them in full), or a plain text saying that nothing matched
// and naming the nearest servers. A query the engine refuses is answered
// with is_error. Only deferred tools are searched. The error is non-nil
// only when ctx ends.
func (ts *Toolset) AnswerSearch(ctx context.Context, toolUseID string, input json.RawMessage) (SearchAnswer, error) {
	var in searchInput
	if err := json.Unmarshal(input, &in); err != nil {
		return errorAnswer(toolUseID, fmt.Sprintf("the input must be {\"query\": \"...\"} or {\"queries\": [\"...\"]}: %v", err)), nil
	}
	if !ts.decision.SearchOn || ts.ix == nil {
		return errorAnswer(toolUseID, "tool search is off: "+ts.decision.Why()), nil
	}
	max := in.MaxResults
	if max == 0 {
		max = ts.cfg.MaxResults
	}
	res, err := ts.ix.SearchMany(ctx, search.Request{
		Query:      in.Query,
		MaxResults: max,
		Visible:    ts.searchable,
	}, in.Queries)
	if err != nil {
		if errors.Is(err, search.ErrBadQuery) {
			return errorAnswer(toolUseID, err.Error()), nil
		}
		return SearchAnswer{}, fmt.Errorf("anthropic: tool search %q: %w", in.asked(), err)
	}
	ans := SearchAnswer{Result: res}
	for _, h := range res.Hits {
		if name := ts.wireOf(h.Tool); name != "" {
			ans.Loaded = append(ans.Loaded, name)
		}
	}
	tr := sdk.ToolResultBlockParam{ToolUseID: toolUseID}
	switch {
	case len(ans.Loaded) == 0:
		tr.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: noMatchText(in.asked(), res)}}}
	case ts.decision.Expand || !ts.answersByReference():
		// Under Inline and ReferenceAdd the next Turn enables the tools
		// with a tool_addition; under Plain they are sent in full.
		text := discovery.LoadedText(ans.Loaded)
		if len(res.Unknown) > 0 {
			text += "\nUnknown names: " + strings.Join(res.Unknown, ", ")
		}
		tr.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: text}}}
	default:
		ans.References = true
		for _, n := range ans.Loaded {
			tr.Content = append(tr.Content, sdk.ToolResultBlockParamContentUnion{OfToolReference: &sdk.ToolReferenceBlockParam{ToolName: n}})
		}
		if len(res.Unknown) > 0 {
			tr.Content = append(tr.Content, sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: "Unknown names: " + strings.Join(res.Unknown, ", ")}})
		}
	}
	ans.Block = sdk.ContentBlockParamUnion{OfToolResult: &tr}
	ts.log.Debug("toolsearch: search answered", "query", in.Query, "queries", in.Queries, "form", res.Form, "loaded", ans.Loaded, "total", res.Total)
	return ans, nil
}

// answersByReference reports whether search answers carry tool_reference
// blocks: under Classic only (for Config.Model on Config.Endpoint).
func (ts *Toolset) answersByReference() bool {
	s, _ := ts.Strategy("")
	return s == Classic
}

// searchable is the search's visibility: deferred tools only.
func (ts *Toolset) searchable(t *catalog.Tool) bool {
	if _, ok := ts.builtinCat[t]; ok {
		return true
	}
	i, ok := ts.byName[ts.names.Wire(t)]
	return ok && ts.tools[i].deferred
}

// wireOf returns the wire name of a catalog tool (or indexed built-in).
func (ts *Toolset) wireOf(t *catalog.Tool) string {
	if i, ok := ts.builtinCat[t]; ok {
		return nameOf(ts.cfg.Builtins[i])
	}
	return ts.names.Wire(t)
}

func errorAnswer(id, text string) SearchAnswer {
	tr := sdk.ToolResultBlockParam{ToolUseID: id, IsError: param.NewOpt(true),
		Content: []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: text}}}}
	return SearchAnswer{Block: sdk.ContentBlockParamUnion{OfToolResult: &tr}}
}

// noMatchText says plainly that nothing matched, and where to look.
func noMatchText(queries []string, res search.Result) string {
	return discovery.NoMatchAnyText(queries, res.Unknown, res.NearestServers)
}

// ResultsMessage builds the user message that answers an assistant turn:
// the tool_result blocks first (the API requires them before anything
// else), then the other blocks, then ToolLoadedText when an answer loaded
// tools by reference.
func ResultsMessage(blocks []sdk.ContentBlockParamUnion, answers ...SearchAnswer) sdk.MessageParam {
	var results, rest []sdk.ContentBlockParamUnion
	for _, b := range blocks {
		if b.OfToolResult != nil {
			results = append(results, b)
		} else {
			rest = append(rest, b)
		}
	}
	loaded := false
	for _, a := range answers {
		results = append(results, a.Block)
		loaded = loaded || a.References
	}
	out := append(results, rest...)
	if loaded {
		out = append(out, sdk.NewTextBlock(ToolLoadedText))
	}
	return sdk.NewUserMessage(out...)
}
