package tracing

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// tracesPath is where OTLP/HTTP takes traces; a URL endpoint without a
// path gets it.
const tracesPath = "/v1/traces"

// newExporter builds the OTLP exporter of o.Protocol. Its own retries are
// off: the span queue counts a failed batch as dropped and the next batch
// is the retry, so a dead collector costs one failed call per batch, not a
// backlog of retrying ones.
func newExporter(ctx context.Context, o Options) (sdktrace.SpanExporter, error) {
	isURL := strings.Contains(o.Endpoint, "://")
	switch o.Protocol {
	case "http":
		opts := []otlptracehttp.Option{
			otlptracehttp.WithTimeout(o.ExportTimeout),
			otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}),
		}
		if isURL {
			u, err := url.Parse(o.Endpoint)
			if err != nil {
				return nil, fmt.Errorf("tracing: endpoint %q is not a URL", o.Endpoint)
			}
			if u.Path == "" || u.Path == "/" {
				u.Path = tracesPath
			}
			opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
		} else {
			opts = append(opts, otlptracehttp.WithEndpoint(o.Endpoint))
			if o.Insecure {
				opts = append(opts, otlptracehttp.WithInsecure())
			}
		}
		if len(o.Headers) > 0 {
			opts = append(opts, otlptracehttp.WithHeaders(o.Headers))
		}
		return otlptracehttp.New(ctx, opts...)
	case "grpc", "":
		opts := []otlptracegrpc.Option{
			otlptracegrpc.WithTimeout(o.ExportTimeout),
			otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: false}),
		}
		if isURL {
			opts = append(opts, otlptracegrpc.WithEndpointURL(o.Endpoint))
		} else {
			opts = append(opts, otlptracegrpc.WithEndpoint(o.Endpoint))
			if o.Insecure {
				opts = append(opts, otlptracegrpc.WithInsecure())
			}
		}
		if len(o.Headers) > 0 {
			opts = append(opts, otlptracegrpc.WithHeaders(o.Headers))
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	return nil, fmt.Errorf("tracing: protocol %q is not grpc or http", o.Protocol)
}
