package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// Strategy is how a Responses conversation reaches the deferred tools.
type Strategy int

const (
	// StrategyAuto picks StrategyToolSearch for a model that supports
	// tool_search and StrategyAdditionalTools for one that does not
	// (Config.NoToolSearch), then steps down past what the endpoint has
	// refused.
	StrategyAuto Strategy = iota
	// StrategyToolSearch sends a client-executed tool_search tool; each
	// tool_search_call is answered with a tool_search_output whose
	// namespaces hold the found functions with defer_loading: true.
	StrategyToolSearch
	// StrategyAdditionalTools sends the search as a plain function; its
	// answer names the tools found and an additional_tools input item
	// (role developer) adds their definitions at that point of the
	// conversation. No defer_loading is sent and the tools array never
	// changes.
	StrategyAdditionalTools
	// StrategyFunctions sends the search as a plain function whose answer
	// names the tools found, which the next requests send as ordinary
	// functions in tools. It needs nothing beyond function calling, and
	// the tools array grows as tools are found.
	StrategyFunctions
)

// String returns the strategy's name as ParseStrategy reads it.
func (s Strategy) String() string {
	switch s {
	case StrategyToolSearch:
		return "tool_search"
	case StrategyAdditionalTools:
		return "additional_tools"
	case StrategyFunctions:
		return "functions"
	default:
		return "auto"
	}
}

// ParseStrategy reads "auto", "tool_search", "additional_tools" or
// "functions".
func ParseStrategy(s string) (Strategy, error) {
	for _, st := range []Strategy{StrategyAuto, StrategyToolSearch, StrategyAdditionalTools, StrategyFunctions} {
		if s == st.String() {
			return st, nil
		}
	}
	return 0, fmt.Errorf("openai: unknown strategy %q (want auto, tool_search, additional_tools or functions)", s)
}

// Feature is a part of the Responses wire format that a compatible server
// may lack.
type Feature int

const (
	// FeatureNamespaces is the namespace tool type and the namespace field
	// of function calls.
	FeatureNamespaces Feature = iota + 1
	// FeatureAdditionalTools is the additional_tools input item.
	FeatureAdditionalTools
	// FeatureToolSearch is the tool_search tool, its items and
	// defer_loading.
	FeatureToolSearch
)

// String names the feature as it appears on the wire.
func (f Feature) String() string {
	switch f {
	case FeatureNamespaces:
		return "namespace"
	case FeatureAdditionalTools:
		return "additional_tools"
	case FeatureToolSearch:
		return "tool_search"
	}
	return fmt.Sprintf("feature(%d)", int(f))
}

// Refusals is what an endpoint has refused for a model: for each feature,
// the message of the refusal, or "" while it is accepted.
type Refusals struct {
	Namespaces, AdditionalTools, ToolSearch string
}

func (r *Refusals) of(f Feature) *string {
	switch f {
	case FeatureNamespaces:
		return &r.Namespaces
	case FeatureAdditionalTools:
		return &r.AdditionalTools
	default:
		return &r.ToolSearch
	}
}

// Endpoints remembers, per endpoint and model, the features refused, so
// that a conversation stops sending what failed once. The zero value is
// ready to use and safe for concurrent use; share one across the Toolsets
// of a session (a Toolset is rebuilt when the catalog changes).
type Endpoints struct {
	mu sync.Mutex
	m  map[[2]string]Refusals
}

// Refusals returns what endpoint has refused for model.
func (e *Endpoints) Refusals(endpoint, model string) Refusals {
	if e == nil {
		return Refusals{}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.m[[2]string{endpoint, model}]
}

// Refuse records that endpoint refused feature for model, with the
// refusal's message. It reports false when the feature was already
// refused (so a retry would not change the request).
func (e *Endpoints) Refuse(endpoint, model string, f Feature, msg string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m = map[[2]string]Refusals{}
	}
	k := [2]string{endpoint, model}
	r := e.m[k]
	p := r.of(f)
	if *p != "" {
		return false
	}
	if msg == "" {
		msg = f.String() + " refused"
	}
	*p = msg
	e.m[k] = r
	return true
}

// refusalWords are the phrases with which servers refuse what they do not
// know: OpenAI's own ("Invalid value: 'x'. Supported values are",
// "Unknown parameter"), pydantic's ("does not match any of the expected
// tags", "Extra inputs are not permitted") and plain ones.
var refusalWords = []string{"invalid value", "supported values", "unknown parameter", "unrecognized", "unrecognised",
	"not supported", "unsupported", "does not match any of the expected", "extra inputs are not permitted",
	"not permitted", "not allowed", "unknown type", "unknown field", "unknown variant", "no such",
	// defer_loading is only sent beside a tool_search tool: a refusal
	// saying it needs one means something on the way dropped the tool.
	"require a tool_search", "requires a tool_search"}

// featureWords lead a refusal's message to the feature it names.
var featureWords = []struct {
	word string
	f    Feature
}{
	{"additional_tools", FeatureAdditionalTools},
	{"namespace", FeatureNamespaces},
	{"tool_search", FeatureToolSearch},
	{"defer_loading", FeatureToolSearch},
}

// Refused recognises a refusal of a wire feature: a 400 or 422 whose
// message says that something is unknown or unsupported and names
// additional_tools, namespace, tool_search (or its items) or
// defer_loading. The feature named first wins, as a message lists the
// supported values after the refused one. It returns the feature and the
// message; any other error yields false.
func Refused(err error) (Feature, string, bool) {
	var apiErr *oai.Error
	if !errors.As(err, &apiErr) {
		return 0, "", false
	}
	if apiErr.StatusCode != http.StatusBadRequest && apiErr.StatusCode != http.StatusUnprocessableEntity {
		return 0, "", false
	}
	msg := apiErr.Message
	if msg == "" {
		msg = apiErr.RawJSON()
	}
	if msg == "" && apiErr.Response != nil {
		msg = apiErr.Error()
	}
	lower := strings.ToLower(msg)
	refusal := false
	for _, w := range refusalWords {
		if strings.Contains(lower, w) {
			refusal = true
			break
		}
	}
	if !refusal {
		return 0, "", false
	}
	for _, text := range []string{lower, strings.ToLower(apiErr.Param)} {
		best, at := Feature(0), -1
		for _, fw := range featureWords {
			if i := strings.Index(text, fw.word); i >= 0 && (at < 0 || i < at) {
				best, at = fw.f, i
			}
		}
		if best != 0 {
			return best, msg, true
		}
	}
	return 0, "", false
}

// Send builds the next turn of conv (Turn), sends it with the Responses
// service c and returns the response. When the endpoint refuses a feature
// (Refused), the refusal is remembered in Config.Endpoints for the
// endpoint (Config.Endpoint) and the model, and the turn is built again one
// step down and sent once more: namespaces give way to plain functions,
// tool_search to additional_tools, additional_tools to functions. Each
// feature is retried once; any other error is returned as it came.
func (ts *Toolset) Send(ctx context.Context, c *responses.ResponseService, conv *Conversation, base responses.ResponseNewParams, opts ...option.RequestOption) (*Turn, *responses.Response, error) {
	for {
		turn, err := ts.Turn(conv, base)
		if err != nil {
			return nil, nil, err
		}
		resp, err := c.New(ctx, turn.Params, opts...)
		if err == nil {
			return turn, resp, nil
		}
		f, msg, ok := Refused(err)
		if !ok || !ts.uses(turn, f) || !ts.endpoints.Refuse(ts.cfg.Endpoint, string(base.Model), f, msg) {
			return turn, nil, fmt.Errorf("openai: responses request (%s strategy): %w", turn.Strategy, err)
		}
		ts.log.Info("toolsearch: endpoint refused a feature; sending again without it",
			"endpoint", ts.cfg.Endpoint, "model", base.Model, "feature", f.String(), "message", msg)
	}
}

// uses reports whether turn relies on f, so that refusing it changes the
// next request.
func (ts *Toolset) uses(turn *Turn, f Feature) bool {
	switch f {
	case FeatureNamespaces:
		return turn.Namespaces
	case FeatureAdditionalTools:
		return turn.Strategy == StrategyAdditionalTools
	default:
		return turn.Strategy == StrategyToolSearch
	}
}

// choose picks the strategy of a request for model, and says why.
func (ts *Toolset) choose(model string) (s Strategy, namespaces bool, why string) {
	ref := ts.endpoints.Refusals(ts.cfg.Endpoint, model)
	s = ts.cfg.Strategy
	switch {
	case s != StrategyAuto:
		why = "Config.Strategy is " + s.String()
	case ts.cfg.NoToolSearch:
		s = StrategyAdditionalTools
		why = ts.noToolSearchWhy() + ", so found tools are added by additional_tools items"
	default:
		s = StrategyToolSearch
		why = "the model supports tool_search (Config.NoToolSearch is false)"
	}
	if s == StrategyToolSearch && ref.ToolSearch != "" {
		s = StrategyAdditionalTools
		why += fmt.Sprintf("; the endpoint refused tool_search (%q), so additional_tools", ref.ToolSearch)
	}
	if s == StrategyAdditionalTools && ref.AdditionalTools != "" {
		s = StrategyFunctions
		why += fmt.Sprintf("; the endpoint refused additional_tools (%q), so found tools are sent as functions", ref.AdditionalTools)
	}
	namespaces = s != StrategyFunctions && !ts.cfg.NoNamespaces && ref.Namespaces == ""
	switch {
	case s == StrategyFunctions:
	case ts.cfg.NoNamespaces:
		why += "; namespaces off (Config.NoNamespaces)"
	case ref.Namespaces != "":
		why += fmt.Sprintf("; the endpoint refused namespaces (%q), so plain function names", ref.Namespaces)
	}
	return s, namespaces, why
}

func (ts *Toolset) noToolSearchWhy() string {
	if ts.cfg.NoToolSearchWhy != "" {
		return ts.cfg.NoToolSearchWhy
	}
	return "the model does not support tool_search"
}
