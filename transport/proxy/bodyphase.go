package proxy

import (
	"context"
	"net/http/httptrace"
	"sync/atomic"
)

// bodyPhase follows one attempt's request through the transport, so that a
// failure can tell whether the upstream was still receiving the body: the
// request had started (its headers were written on a connection) but was
// never fully written. An upstream that refuses a body by resetting the
// connection fails that way on every credential; the bench counts such a
// request once (domain.Outcome.BodyUnsent). A failure to connect at all is
// not in the body phase: it says nothing about the body.
type bodyPhase struct {
	started atomic.Bool // headers written on a connection
	written atomic.Bool // the request and its whole body written
}

// trace returns ctx with the client trace that fills b. The transport may
// call it from its own goroutines, hence the atomics.
func (b *bodyPhase) trace(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteHeaders: func() { b.started.Store(true) },
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				b.written.Store(true)
			}
		},
	})
}

// unsent reports a failure in the body phase: the request started and was
// not fully written.
func (b *bodyPhase) unsent() bool { return b.started.Load() && !b.written.Load() }
