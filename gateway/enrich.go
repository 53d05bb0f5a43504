package gateway

// Background enrichment (toolsearch.enrich, off by default): the gateway
// asks a model for the search hints of the tools that have none (package
// enrich), writes them to the state directory's hints file and re-indexes
// the servers they change (hints.go). It runs once the servers have all
// had their first start, and again a little after the catalog changes or
// a client connects, for at most MaxToolsPerRun tools each time, with the
// configured requests in flight: it never holds up a listing, a search or
// a call. Only tools that policy lets clients see are sent, and of each
// only its name, description and input schema.
//
// The model is a provider's API (Anthropic, or an OpenAI-compatible
// server) or, with provider "sampling", the client: the newest connected
// client session that declared the sampling capability is asked through
// sampling/createMessage, as a server would ask it. With no such client,
// a run waits for one.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/core/catalog"
	"github.com/toolsearch/toolsearch/core/hints"
	"github.com/toolsearch/toolsearch/enrich"
	"github.com/toolsearch/toolsearch/gateway/config"
)

// enrichQuiet is how long the catalog must stay unchanged before a
// background run starts (Gateway.enrichQuiet; tests lower it).
const enrichQuiet = 5 * time.Second

// kickEnrich wakes the background enrichment, if it runs.
func (g *Gateway) kickEnrich() {
	select {
	case g.enrichKick <- struct{}{}:
	default:
	}
}

// startEnrich starts the background enrichment when it is configured.
// It is called by Start.
func (g *Gateway) startEnrich(ctx context.Context) {
	e := g.cfg.Gateway.Enrich
	if !e.Enabled || g.static {
		return
	}
	if g.stateHintsPath() == "" {
		g.log.Warn("toolsearch.enrich is on but there is no state directory to keep hints in; it stays off")
		return
	}
	p, err := g.enrichProvider(e)
	if err != nil {
		g.log.Warn("toolsearch.enrich stays off", "err", err)
		return
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		g.enrichLoop(ctx, p)
	}()
}

// enrichProvider makes the configured provider.
func (g *Gateway) enrichProvider(e config.Enrich) (enrich.Provider, error) {
	switch e.Provider {
	case config.EnrichAnthropic:
		return enrich.NewAnthropic(enrich.Config{Model: e.Model, BaseURL: e.BaseURL}), nil
	case config.EnrichOpenAI:
		return enrich.NewOpenAI(enrich.Config{Model: e.Model, BaseURL: e.BaseURL}), nil
	case config.EnrichSampling, "":
		return &samplingProvider{g: g, model: e.Model}, nil
	}
	return nil, fmt.Errorf("unknown provider %q", e.Provider)
}

// enrichLoop runs enrichment whenever there may be something to do, until
// ctx ends.
func (g *Gateway) enrichLoop(ctx context.Context, p enrich.Provider) {
	if err := g.WaitSettled(ctx); err != nil {
		return
	}
	for {
		g.enrichOnce(ctx, p)
		// Wait for a change, then for the catalog to be quiet.
		select {
		case <-ctx.Done():
			return
		case <-g.enrichKick:
		}
		for quiet := false; !quiet; {
			select {
			case <-ctx.Done():
				return
			case <-g.enrichKick:
			case <-time.After(g.enrichQuiet):
				quiet = true
			}
		}
	}
}

// enrichOnce sends the visible tools that have no current hints, at most
// MaxToolsPerRun of them.
func (g *Gateway) enrichOnce(ctx context.Context, p enrich.Provider) {
	e := g.cfg.Gateway.Enrich
	if sp, ok := p.(*samplingProvider); ok && sp.client() == nil {
		g.log.Debug("background enrichment waits for a client that offers sampling")
		return
	}
	cache, err := hints.OpenCache(g.stateHintsPath())
	if err != nil {
		g.log.Warn("background enrichment cannot read the hints file it would add to", "err", err)
		return
	}
	var todo []*catalog.Tool
	for _, t := range g.Snapshot().Tools() {
		if len(todo) == e.MaxToolsPerRun {
			break
		}
		if g.Visible(t) && !cache.Current(t) {
			todo = append(todo, t)
		}
	}
	if len(todo) == 0 {
		return
	}
	opts := enrich.Options{BatchSize: e.BatchSize, Concurrency: e.Concurrency}
	plan, err := enrich.NewPlan(todo, nil, opts)
	if err != nil {
		g.log.Warn("background enrichment", "err", err)
		return
	}
	g.log.Info("writing search hints in the background", "provider", e.Provider, "tools", plan.Send,
		"requests", len(plan.Batches), "input_tokens_estimate", plan.InputTokens)
	res, err := enrich.Run(ctx, p, plan, cache, opts)
	attrs := []any{"written", res.Written, "rejected", res.Rejected, "failed", res.Failed, "requests", res.Requests,
		"input_tokens", res.InputTokens, "output_tokens", res.OutputTokens}
	for i, r := range append(res.Rejections, res.Failures...) {
		if i == 5 {
			break
		}
		attrs = append(attrs, fmt.Sprintf("not_written_%d", i+1), g.Redact(r.String()))
	}
	switch {
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		attrs = append(attrs, "stopped", "the gateway is stopping")
		g.log.Info("background enrichment stopped", attrs...)
	case err != nil:
		g.log.Warn("background enrichment gave up", append(attrs, "err", g.redactErr(err))...)
	default:
		g.log.Info("background enrichment done", attrs...)
	}
	if res.Written > 0 && ctx.Err() == nil {
		g.rehint(cache.Set())     // hints.go
		g.shareHints(cache.Set()) // for the other replicas (cluster.go)
	}
}

// samplingProvider asks a connected client's model through MCP sampling.
type samplingProvider struct {
	g     *Gateway
	model string
}

// errNoSampler is returned when no connected client offers sampling.
var errNoSampler = errors.New("no connected client offers sampling")

// client returns the newest client session that declared sampling.
func (p *samplingProvider) client() *mcp.ServerSession {
	var best *session
	for _, s := range p.g.sessionList() {
		ss := s.serverSession()
		if ss == nil || !canSample(clientCaps(ss)) {
			continue
		}
		if best == nil || s.seq > best.seq {
			best = s
		}
	}
	if best == nil {
		return nil
	}
	return best.serverSession()
}

// Complete sends the prompt as sampling/createMessage and reads the text
// of the answer.
func (p *samplingProvider) Complete(ctx context.Context, req enrich.Request) (enrich.Reply, error) {
	ss := p.client()
	if ss == nil {
		return enrich.Reply{}, fmt.Errorf("%w: %w", enrich.ErrFatal, errNoSampler)
	}
	//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
	params := &mcp.CreateMessageParams{
		SystemPrompt: req.System,
		MaxTokens:    int64(req.MaxTokens),
		//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
		Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: req.Prompt}}},
		// Short structured text: a small, fast model does.
		//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
		ModelPreferences: &mcp.ModelPreferences{CostPriority: 0.8, SpeedPriority: 0.8, IntelligencePriority: 0.3},
	}
	if p.model != "" {
		//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
		params.ModelPreferences.Hints = []*mcp.ModelHint{{Name: p.model}}
	}
	//lint:ignore SA1019 sampling is forwarded for 2025-11-25 clients and servers, which still use it
	res, err := ss.CreateMessage(ctx, params)
	if err != nil {
		return enrich.Reply{}, fmt.Errorf("sampling: %w", err)
	}
	text, ok := res.Content.(*mcp.TextContent)
	if !ok {
		return enrich.Reply{}, fmt.Errorf("sampling: the client answered with %T, not text", res.Content)
	}
	return enrich.Reply{Text: text.Text, InputTokens: catalog.CountTokens(req.System) + catalog.CountTokens(req.Prompt),
		OutputTokens: catalog.CountTokens(text.Text)}, nil
}
