package proxy

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/airouter/airouter/domain"
)

// Tracer records a span per client request and one per upstream attempt;
// *tracing.Tracer satisfies it. The spans travel in the contexts it
// returns. With no Tracer (Deps.Tracer nil) the proxy makes none of these
// calls and allocates nothing for them.
type Tracer interface {
	// StartRequest starts the server span of a client request.
	StartRequest(ctx context.Context, clientHeader http.Header, method, path string) context.Context
	// EndRequest ends it: the status the client got (0 when it left
	// before an answer), the public model and request id ("" before they
	// are known), the attempts made and the outcome.
	EndRequest(ctx context.Context, status int, model, requestID string, attempts int, outcome string)
	// StartAttempt starts the client span of one upstream attempt under
	// the request's span and writes its W3C traceparent into the upstream
	// request's headers. provider is the gen_ai.provider.name ("" when
	// unknown), operation the gen_ai.operation.name.
	StartAttempt(ctx context.Context, upstreamHeader http.Header, attempt int,
		credential, provider, model, upstreamModel, operation string) context.Context
	// EndAttempt ends an attempt's span with the upstream's status (0 when
	// none came), its outcome class and the tokens its usage reported.
	EndAttempt(ctx context.Context, status int, class string, inputTokens, outputTokens int64)
}

// Outcomes of a request span that no upstream answer names.
const (
	outcomeRefused   = "refused"   // answered before the failover loop (key, body, model)
	outcomeExhausted = "exhausted" // every candidate failed or none was usable
	outcomeCanceled  = "canceled"  // the client left before an answer
)

// serveTraced is serveProxied inside a request span.
func (p *Proxy) serveTraced(w http.ResponseWriter, r *http.Request, ep endpoint) {
	ctx := p.tracer.StartRequest(r.Context(), r.Header, r.Method, r.URL.Path)
	sw := &statusWriter{ResponseWriter: w}
	var rq *request
	p.serve(sw, r.WithContext(ctx), ep, &rq)
	model, id, attempts, outcome := "", "", 0, outcomeRefused
	if rq != nil {
		model, id, attempts = rq.model, rq.id, len(rq.hops)
		switch {
		case rq.exhausted:
			outcome = outcomeExhausted
		case sw.status == 0:
			outcome = outcomeCanceled
		case attempts > 0:
			outcome = string(rq.hops[attempts-1].class)
		}
	}
	p.tracer.EndRequest(ctx, sw.status, model, id, attempts, outcome)
}

// traceAttempt starts the span of attempt n on c and puts it on the
// upstream request (its context and traceparent header).
func (p *Proxy) traceAttempt(req *http.Request, rq *request, c *candidate, n int) (*http.Request, context.Context) {
	upstreamModel := rq.model
	if c.send != nil {
		_ = json.Unmarshal(c.send, &upstreamModel)
	}
	ctx := p.tracer.StartAttempt(req.Context(), req.Header, n, c.cred.name, providerName(c.cred.typ),
		rq.model, upstreamModel, rq.ep.operation())
	return req.WithContext(ctx), ctx
}

// endAttempt ends a hop's span, if it has one.
func (p *Proxy) endAttempt(h *hop, class domain.Class) {
	if h.span != nil {
		p.tracer.EndAttempt(h.span, h.status, string(class), h.usage.in, h.usage.out)
	}
}

// providerName is the gen_ai.provider.name of a credential type; a proxy
// credential is another router, whose provider is not known here.
func providerName(t domain.CredentialType) string {
	switch t {
	case domain.CredentialOpenAI:
		return "openai"
	case domain.CredentialAnthropic:
		return "anthropic"
	}
	return ""
}

// operation is the gen_ai.operation.name of a surface.
func (e endpoint) operation() string {
	switch e {
	case epCompletions:
		return "text_completion"
	case epEmbeddings:
		return "embeddings"
	}
	return "chat"
}

// statusWriter remembers the status written to the client, for the
// request span.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
