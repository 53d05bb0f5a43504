// Package otlp builds the tracer provider serve sends the gateway's spans
// with: OTLP protobuf over HTTP, batched and sampled, configured by
// toolsearch.tracing and the OTEL_EXPORTER_OTLP_* variables. It is
// apart from package tracing so that a program that brings its own
// provider links no exporter.
package otlp

import (
	"context"
	"fmt"
	"os"

	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/toolsearch/toolsearch/gateway/config"
)

// Bounds of what the provider holds while a collector is slow or down.
const (
	// MaxQueuedSpans is how many ended spans wait for the exporter; past
	// it, new spans are dropped (the batch being sent is apart, at most
	// MaxExportBatch spans).
	MaxQueuedSpans = 1024
	// MaxExportBatch is how many spans one export posts at most.
	MaxExportBatch = 256
	// MaxAttributeBytes bounds any string attribute value (package tracing
	// clips the client's text well within it).
	MaxAttributeBytes = 4096
)

// NewProvider builds the tracer provider of a configuration whose tracing
// is on: spans batched and posted as OTLP protobuf over HTTP to
// cfg.Endpoint (else where the OTEL_EXPORTER_OTLP_* variables say),
// sampled at cfg.SampleRatio among the traces that start at the gateway
// (a request with a trace context follows its parent's decision). The
// resource names the service (cfg.ServiceName, else OTEL_SERVICE_NAME,
// else "toolsearch") and version, and reads OTEL_RESOURCE_ATTRIBUTES.
//
// At most MaxQueuedSpans ended spans wait while the collector is slow or
// down (more are dropped, never queued without bound, and the gateway
// never waits for the collector), and no attribute value is longer than
// MaxAttributeBytes.
//
// Nothing is sent until the first span ends. The caller shuts the
// provider down when the gateway stops, which sends the spans still
// batched.
func NewProvider(ctx context.Context, cfg config.Tracing, version string) (*sdktrace.TracerProvider, error) {
	set, err := settings(cfg.Endpoint, cfg.Headers, os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("tracing: the OTLP exporter: %w", err)
	}
	exp := newExporter(set)
	res, err := Resource(ctx, cfg.ServiceName, version)
	if err != nil {
		return nil, err
	}
	limits := sdktrace.NewSpanLimits() // OTEL_SPAN_* variables, else the SDK's defaults
	if limits.AttributeValueLengthLimit < 0 || limits.AttributeValueLengthLimit > MaxAttributeBytes {
		limits.AttributeValueLengthLimit = MaxAttributeBytes
	}
	return sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, sdktrace.WithMaxQueueSize(MaxQueuedSpans), sdktrace.WithMaxExportBatchSize(MaxExportBatch)),
		sdktrace.WithRawSpanLimits(limits),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.SampleRatio))),
	), nil
}

// Resource describes the gateway in its spans: service.name (name, else
// OTEL_SERVICE_NAME, else "toolsearch"), service.version, the SDK, and
// OTEL_RESOURCE_ATTRIBUTES.
func Resource(ctx context.Context, name, version string) (*resource.Resource, error) {
	opts := []resource.Option{
		resource.WithAttributes(semconv.ServiceName(config.DefaultTracingServiceName)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
	}
	if name != "" {
		opts = append(opts, resource.WithAttributes(semconv.ServiceName(name)))
	}
	if version != "" {
		opts = append(opts, resource.WithAttributes(semconv.ServiceVersion(version)))
	}
	res, err := resource.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("tracing: the resource: %w", err)
	}
	return res, nil
}
