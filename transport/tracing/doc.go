// Package tracing holds airouter's OpenTelemetry traces: the tracer
// provider, the OTLP exporter (gRPC or HTTP), the bounded span queue
// between them (a full queue or a failed export drops spans and counts
// them; the proxy never waits on the collector), the server span of a
// proxied request and the client span of each upstream attempt, following
// the OpenTelemetry GenAI and HTTP semantic conventions, and W3C trace
// context: traceparent written on every upstream request, and read from a
// client only when trusted.
//
// The proxy reaches it through its own Tracer interface
// (transport/proxy), which *Tracer satisfies; cmd/airouter builds it from
// the config's otel section. No credential key or header value is ever an
// attribute or a log field.
package tracing
