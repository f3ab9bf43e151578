package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// Defaults applied by New.
const (
	DefaultQueueSize     = 2048
	DefaultBatchSize     = 512
	DefaultInterval      = 5 * time.Second
	DefaultExportTimeout = 10 * time.Second
)

// Attribute keys of airouter's own, beside the semantic conventions'.
const (
	keyCredential = attribute.Key("airouter.credential")
	keyModel      = attribute.Key("airouter.model")
	keyAttempt    = attribute.Key("airouter.attempt")
	keyAttempts   = attribute.Key("airouter.attempts")
	keyOutcome    = attribute.Key("airouter.outcome")
	keyRequestID  = attribute.Key("airouter.request_id")
	// keySystem is gen_ai.system, the older name of gen_ai.provider.name
	// that backends built on earlier conventions still read.
	keySystem = attribute.Key("gen_ai.system")
)

// Options configure a Tracer; they are plain values (cmd/airouter fills
// them from the otel section of the config).
type Options struct {
	// Endpoint is host:port or an http(s) URL; Protocol is "grpc" or
	// "http". Insecure sends to a host:port endpoint without TLS.
	Endpoint string
	Protocol string
	Insecure bool
	// Headers go with every export. Their values are secrets: they are
	// never logged.
	Headers        map[string]string
	ServiceName    string
	ServiceVersion string
	// SampleRatio is the share of new traces sampled (0..1); a trace
	// adopted from a client keeps the client's decision.
	SampleRatio float64
	// TrustIncoming adopts a client's W3C traceparent as the parent of
	// the request's span; otherwise each request starts a new trace.
	TrustIncoming bool
	// QueueSize bounds the spans waiting for export (a full queue drops
	// and counts); BatchSize is the most spans in one export; Interval is
	// how often a partial batch goes out; ExportTimeout bounds one
	// export. Zero means the defaults above.
	QueueSize     int
	BatchSize     int
	Interval      time.Duration
	ExportTimeout time.Duration
	// Clock ticks the export interval; nil means the real clock.
	Clock  clockwork.Clock
	Logger hclog.Logger // nil discards
}

// Tracer records the spans of proxied requests and exports them over
// OTLP. Its methods are what the proxy's Tracer interface asks for; it is
// safe for concurrent use.
type Tracer struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
	queue    *spanQueue
	prop     propagation.TraceContext
	trust    bool
}

// New builds the exporter, the span queue and the tracer provider. It
// does not connect: a collector that is down shows in the first export.
func New(ctx context.Context, o Options) (*Tracer, error) {
	o = withDefaults(o)
	if o.SampleRatio < 0 || o.SampleRatio > 1 {
		return nil, fmt.Errorf("tracing: sample ratio %v is not in 0..1", o.SampleRatio)
	}
	exp, err := newExporter(ctx, o)
	if err != nil {
		return nil, err
	}
	q := newSpanQueue(exp, o)
	attrs := []attribute.KeyValue{semconv.ServiceName(o.ServiceName)}
	if o.ServiceVersion != "" {
		attrs = append(attrs, semconv.ServiceVersion(o.ServiceVersion))
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(q),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(o.SampleRatio))),
		sdktrace.WithResource(resource.NewWithAttributes(semconv.SchemaURL, attrs...)),
	)
	return &Tracer{
		provider: tp,
		tracer:   tp.Tracer("github.com/airouter/airouter/transport/tracing"),
		queue:    q,
		trust:    o.TrustIncoming,
	}, nil
}

func withDefaults(o Options) Options {
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	o.BatchSize = min(o.BatchSize, o.QueueSize)
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.ExportTimeout <= 0 {
		o.ExportTimeout = DefaultExportTimeout
	}
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	return o
}

// StartRequest starts the server span of a client request. The client's
// traceparent (and tracestate) is its parent only when trusted.
func (t *Tracer) StartRequest(ctx context.Context, h http.Header, method, path string) context.Context {
	kind := trace.WithSpanKind(trace.SpanKindServer)
	attrs := trace.WithAttributes(semconv.HTTPRequestMethodKey.String(method), semconv.HTTPRoute(path))
	name := requestSpanName(method, path)
	if t.trust {
		ctx = t.prop.Extract(ctx, propagation.HeaderCarrier(h))
		ctx, _ = t.tracer.Start(ctx, name, kind, attrs)
	} else {
		ctx, _ = t.tracer.Start(ctx, name, kind, attrs, trace.WithNewRoot())
	}
	return ctx
}

// requestSpanName is "{method} {route}", without building the string for
// the routes the proxy serves.
func requestSpanName(method, path string) string {
	if method == http.MethodPost {
		switch path {
		case "/v1/chat/completions":
			return "POST /v1/chat/completions"
		case "/v1/completions":
			return "POST /v1/completions"
		case "/v1/embeddings":
			return "POST /v1/embeddings"
		case "/v1/responses":
			return "POST /v1/responses"
		case "/v1/messages":
			return "POST /v1/messages"
		}
	}
	return method + " " + path
}

// EndRequest ends the request's span with the status the client got, the
// public model, the request id, the attempts made and the outcome (the
// answering attempt's class, "exhausted", or why the request was
// refused). A status of 500 and above marks the span failed.
func (t *Tracer) EndRequest(ctx context.Context, status int, model, requestID string, attempts int, outcome string) {
	span := trace.SpanFromContext(ctx)
	var buf [5]attribute.KeyValue // one SetAttributes call, no slice to grow
	attrs := append(buf[:0], keyAttempts.Int(attempts), keyOutcome.String(outcome))
	if status > 0 {
		attrs = append(attrs, semconv.HTTPResponseStatusCode(status))
	}
	if model != "" {
		attrs = append(attrs, semconv.GenAIRequestModelKey.String(model))
	}
	if requestID != "" {
		attrs = append(attrs, keyRequestID.String(requestID))
	}
	span.SetAttributes(attrs...)
	if status >= 500 {
		span.SetStatus(codes.Error, outcome)
	}
	span.End()
}

// StartAttempt starts the client span of one upstream attempt, a child of
// the request's span in ctx, and writes its traceparent into the upstream
// request's headers (replacing the client's, and dropping a tracestate the
// span does not carry). provider is the gen_ai.provider.name ("" for
// none); model is the public model and upstreamModel the name sent
// upstream; operation is the gen_ai.operation.name.
func (t *Tracer) StartAttempt(ctx context.Context, upstream http.Header, attempt int,
	credential, provider, model, upstreamModel, operation string) context.Context {
	attrs := []attribute.KeyValue{
		keyCredential.String(credential),
		keyModel.String(model),
		keyAttempt.Int(attempt),
		semconv.GenAIRequestModelKey.String(upstreamModel),
		semconv.GenAIOperationNameKey.String(operation),
	}
	if provider != "" {
		attrs = append(attrs, semconv.GenAIProviderNameKey.String(provider), keySystem.String(provider))
	}
	ctx, _ = t.tracer.Start(ctx, operation+" "+upstreamModel,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	upstream.Del("Tracestate")
	t.prop.Inject(ctx, propagation.HeaderCarrier(upstream))
	return ctx
}

// EndAttempt ends an attempt's span: the upstream's status (0 when none
// came), the outcome class and the tokens its usage reported. An attempt
// that did not end in "ok" is marked failed, with error.type the class.
func (t *Tracer) EndAttempt(ctx context.Context, status int, class string, inputTokens, outputTokens int64) {
	span := trace.SpanFromContext(ctx)
	var buf [5]attribute.KeyValue
	attrs := append(buf[:0], keyOutcome.String(class))
	if status > 0 {
		attrs = append(attrs, semconv.HTTPResponseStatusCode(status))
	}
	if inputTokens > 0 || outputTokens > 0 {
		attrs = append(attrs, semconv.GenAIUsageInputTokensKey.Int64(inputTokens),
			semconv.GenAIUsageOutputTokensKey.Int64(outputTokens))
	}
	if class != "ok" {
		attrs = append(attrs, semconv.ErrorTypeKey.String(class))
		span.SetStatus(codes.Error, class)
	}
	span.SetAttributes(attrs...)
	span.End()
}

// Dropped reports the spans lost so far: those that found the queue full
// (or came after shutdown) and those in exports that failed.
func (t *Tracer) Dropped() (queueFull, exportFailed uint64) {
	return t.queue.queueFull.Load(), t.queue.exportFailed.Load()
}

// Exported reports the spans the collector accepted.
func (t *Tracer) Exported() uint64 { return t.queue.exported.Load() }

// ForceFlush exports what is queued, within ctx.
func (t *Tracer) ForceFlush(ctx context.Context) error { return t.provider.ForceFlush(ctx) }

// Shutdown exports what is queued and stops, within ctx. Spans ended
// after it are dropped and counted.
func (t *Tracer) Shutdown(ctx context.Context) error {
	err := t.provider.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("tracing: flushing spans at shutdown: %w", err)
	}
	return err
}
