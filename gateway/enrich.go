package gateway

// Background enrichment (toolsearch.enrich, off by default): the gateway
// asks a model for the search hints of the tools that have none for their
// current definition. Package enrichment runs it, with the gateway as its
// owner (enrichOwner, gateway.go); the provider of provider "sampling"
// asks the connected clients' models (samplingProvider, session.go).
// Here are the names this package has exported for it since it was added;
// they are package enrichment's.

import "github.com/toolsearch/toolsearch/gateway/enrichment"

// The states of background enrichment (EnrichStatus.State), as package
// enrichment says them.
const (
	EnrichOff             = enrichment.Off
	EnrichUnavailable     = enrichment.Unavailable
	EnrichWaiting         = enrichment.Waiting
	EnrichRunning         = enrichment.Running
	EnrichIdle            = enrichment.Idle
	EnrichBackoff         = enrichment.Backoff
	EnrichBudgetExhausted = enrichment.BudgetExhausted
)

type (
	// EnrichStatus is background enrichment as /healthz, toolsearch
	// status, /metrics and the dashboard show it.
	EnrichStatus = enrichment.Status
	// EnrichAmount is a number of tools and of tokens.
	EnrichAmount = enrichment.Amount
	// EnrichCounts counts tools by what came of them.
	EnrichCounts = enrichment.Counts
	// EnrichProgress is where a run stands.
	EnrichProgress = enrichment.Progress
	// EnrichCoordinator is what a Cluster offers background enrichment
	// besides Cluster (package cluster implements it): leases on work
	// that one replica does for all, and a day's spend counted for all.
	EnrichCoordinator = enrichment.Coordinator
)
