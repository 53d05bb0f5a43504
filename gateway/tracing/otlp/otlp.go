// Package otlp builds the tracer provider serve sends the gateway's spans
// with: OTLP protobuf over HTTP, batched and sampled, configured by
// toolsearch.tracing and the OTEL_* variables. It is apart from package
// tracing so that a program that brings its own exporter links none.
package otlp

import (
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/toolsearch/toolsearch/gateway/config"
	"github.com/toolsearch/toolsearch/gateway/tracing"
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

// Resource attribute keys (OpenTelemetry semantic conventions).
const (
	keyServiceName    tracing.Key = "service.name"
	keyServiceVersion tracing.Key = "service.version"
	keySDKName        tracing.Key = "telemetry.sdk.name"
	keySDKLanguage    tracing.Key = "telemetry.sdk.language"
	keySDKVersion     tracing.Key = "telemetry.sdk.version"
)

// NewProvider builds the tracer provider of a configuration whose tracing
// is on: spans batched and posted as OTLP protobuf over HTTP to
// cfg.Endpoint (else where the OTEL_EXPORTER_OTLP_* variables say),
// sampled at cfg.SampleRatio among the traces that start at the gateway
// (a request with a trace context follows its parent's decision). The
// resource is Resource's.
//
// At most MaxQueuedSpans ended spans wait while the collector is slow or
// down (more are dropped, never queued without bound, and the gateway
// never waits for the collector), and no attribute value is longer than
// MaxAttributeBytes. A batch goes every OTEL_BSP_SCHEDULE_DELAY
// milliseconds (5000) or when MaxExportBatch spans wait, and may take
// OTEL_BSP_EXPORT_TIMEOUT milliseconds (30000); OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT
// (128) and OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT or
// OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT lower the bounds of a span's
// attributes. onError is told of each export that failed and of spans
// dropped (nil ignores them).
//
// Nothing is sent until the first span ends. The caller shuts the
// provider down when the gateway stops, which sends the spans still
// batched.
func NewProvider(cfg config.Tracing, version string, onError func(error)) (*tracing.Provider, error) {
	return newProvider(cfg, version, onError, os.Getenv)
}

func newProvider(cfg config.Tracing, version string, onError func(error), getenv func(string) string) (*tracing.Provider, error) {
	set, err := settings(cfg.Endpoint, cfg.Headers, getenv)
	if err != nil {
		return nil, fmt.Errorf("tracing: the OTLP exporter: %w", err)
	}
	res, err := resource(cfg.ServiceName, version, getenv)
	if err != nil {
		return nil, err
	}
	num := func(name string, def int) (int, error) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return def, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("tracing: %s=%q: want a whole number, 0 or more", name, v)
		}
		return n, nil
	}
	delay, err := num("OTEL_BSP_SCHEDULE_DELAY", int(tracing.DefaultInterval/time.Millisecond))
	if err != nil {
		return nil, err
	}
	timeout, err := num("OTEL_BSP_EXPORT_TIMEOUT", int(tracing.DefaultExportTimeout/time.Millisecond))
	if err != nil {
		return nil, err
	}
	count, err := num("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", tracing.DefaultMaxAttributes)
	if err != nil {
		return nil, err
	}
	length, err := num("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", MaxAttributeBytes)
	if err != nil {
		return nil, err
	}
	if length, err = num("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", length); err != nil {
		return nil, err
	}
	batcher := tracing.NewBatcher(newExporter(set), tracing.BatchOptions{
		MaxQueue:      MaxQueuedSpans,
		MaxBatch:      MaxExportBatch,
		Interval:      time.Duration(max(1, delay)) * time.Millisecond,
		ExportTimeout: time.Duration(max(1, timeout)) * time.Millisecond,
		OnError:       onError,
	})
	return tracing.NewProvider(tracing.ProviderOptions{
		Sampler:           tracing.ParentBased(tracing.RatioSampler(cfg.SampleRatio)),
		Processor:         batcher,
		Resource:          res,
		MaxAttributes:     max(1, count),
		MaxAttributeBytes: min(max(1, length), MaxAttributeBytes),
	}), nil
}

// Resource describes the gateway in its spans: service.name (name, else
// OTEL_SERVICE_NAME, else "toolsearch"), service.version, the
// telemetry.sdk.* attributes (the SDK is toolsearch's own, in
// Go, of the gateway's version), and the
// key=value pairs of OTEL_RESOURCE_ATTRIBUTES (comma-separated,
// percent-encoded), which give way to the others but for the SDK's.
func Resource(name, version string) (*tracing.Resource, error) {
	return resource(name, version, os.Getenv)
}

func resource(name, version string, getenv func(string) string) (*tracing.Resource, error) {
	attrs := []tracing.Attr{
		keyServiceName.String(config.DefaultTracingServiceName),
		keySDKName.String("toolsearch"),
		keySDKLanguage.String("go"),
	}
	if version != "" {
		attrs = append(attrs, keySDKVersion.String(version))
	}
	if v := getenv("OTEL_RESOURCE_ATTRIBUTES"); strings.TrimSpace(v) != "" {
		for i, pair := range strings.Split(v, ",") {
			k, v, ok := strings.Cut(pair, "=")
			key := strings.TrimSpace(k)
			val, err := url.PathUnescape(strings.TrimSpace(v))
			if !ok || key == "" || err != nil {
				// The value may be a secret: name the position, not the text.
				return nil, fmt.Errorf("tracing: OTEL_RESOURCE_ATTRIBUTES: pair %d is not key=value (percent-encoded)", i+1)
			}
			attrs = append(attrs, tracing.Key(key).String(val))
		}
	}
	if s := strings.TrimSpace(getenv("OTEL_SERVICE_NAME")); s != "" {
		attrs = append(attrs, keyServiceName.String(s))
	}
	if name != "" {
		attrs = append(attrs, keyServiceName.String(name))
	}
	if version != "" {
		attrs = append(attrs, keyServiceVersion.String(version))
	}
	return tracing.NewResource(tracing.SchemaURL, attrs...), nil
}
