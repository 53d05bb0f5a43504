package main

import (
	"cmp"
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/gateway/tracing"
	"github.com/toolsearch/toolsearch/gateway/tracing/otlp"
)

// tracingShutdownTimeout bounds sending the spans still batched when serve
// stops.
const tracingShutdownTimeout = 5 * time.Second

// startTracing builds the tracer provider of toolsearch.tracing. What the
// exporter reports (a collector that does not answer, a refused export,
// spans dropped) goes to log, never to stdout.
func startTracing(cfg *config.Config, log *slog.Logger) (*tracing.Provider, error) {
	tc := cfg.Gateway.Tracing
	tp, err := otlp.NewProvider(tc, buildVersion(), func(err error) {
		log.Warn("tracing: spans could not be sent", "err", err)
	})
	if err != nil {
		return nil, err
	}
	log.Info("tracing on", "endpoint", tracingEndpoint(tc), "sample_ratio", tc.SampleRatio,
		"service", cmp.Or(tc.ServiceName, os.Getenv("OTEL_SERVICE_NAME"), config.DefaultTracingServiceName), "query_text", tc.RecordQueries)
	return tp, nil
}

// tracingEndpoint is where spans go, as the exporter decides it.
func tracingEndpoint(tc config.Tracing) string {
	if tc.Endpoint != "" {
		return tc.Endpoint
	}
	if e := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); e != "" {
		return e
	}
	if e := os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); e != "" {
		return e + " (+ /v1/traces)"
	}
	return "http://localhost:4318/v1/traces"
}

// stopTracing sends the spans still batched, within a bound.
func stopTracing(tp *tracing.Provider, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), tracingShutdownTimeout)
	defer cancel()
	if err := tp.Shutdown(ctx); err != nil {
		log.Warn("tracing: the last spans could not be sent", "err", err)
	}
}
