package proxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/domain"
)

// request is one client request on its way through the failover loop.
// Nothing in it outlives the response.
type request struct {
	id    string
	ep    endpoint
	start time.Time
	body  clientBody
	// model is the public id after alias resolution; public is its JSON
	// token when it differs from the one in the body (proxy credentials
	// are sent the public id).
	model    string
	public   []byte
	settings Settings
	// conf is the conf of the table the request started with.
	conf *conf
	pool *pool
	// skip marks candidates tried or found over a limit in this request.
	skip      idxSet
	hops      []hop
	hopBuf    [2]hop
	budgetOut bool
	// exhausted: the request was answered with an exhaustion error.
	exhausted bool
	// forwardAuth allows a keyless proxy credential to forward the
	// client's Authorization: true for a client key, false for the master
	// key.
	forwardAuth bool
}

// hop is one upstream attempt.
type hop struct {
	cand       *candidate
	status     int
	class      domain.Class
	startMS    int64 // offset from the start of the request
	ms         int64 // latency to response headers or failure
	retryAfter time.Duration
	msg        string // the upstream's error message, redacted
	bodyUnsent bool   // failed while the upstream was still receiving the body
	usage      tokenCount
	// span carries the attempt's trace span (nil without a Tracer); the
	// hop's report ends it.
	span context.Context
}

// The causes an attempt's context can be cut with.
var (
	errRequestTimeout = errors.New("upstream request timeout")
	errBudget         = errors.New("fallback time budget exhausted")
	errClientGone     = errors.New("client went away")
)

// failover is the one loop every surface goes through: pick the next
// candidate, try it, and stop on an answer for the client, a client that
// left, the hop limit, the time budget or no candidate left.
func (p *Proxy) failover(w http.ResponseWriter, r *http.Request, rq *request) {
	for {
		if r.Context().Err() != nil {
			return // nobody is left to answer
		}
		if !p.hopAllowed(rq) {
			break
		}
		i, probe := rq.pool.pickProbe(p.gate(), p.clock.Now(), rq.skip, rq.ep, &p.rejected)
		if i < 0 {
			if len(rq.hops) == 0 && rq.conf.panic && p.panicServe(w, r, rq) {
				return
			}
			break
		}
		rq.skip.set(i)
		done := p.attempt(w, r, rq, &rq.pool.cands[i])
		if probe {
			p.probed(rq)
		}
		if done {
			p.metrics.Request(len(rq.hops))
			return
		}
		if rq.budgetOut {
			break
		}
	}
	p.metrics.Request(len(rq.hops))
	rq.exhausted = true
	p.exhaust(w, rq)
}

func (p *Proxy) gate() Gate {
	if p.loadGate == nil {
		return nil
	}
	return p.loadGate()
}

// remainingAt is what is left of the time budget at now: a large value
// when there is no budget, negative once it has run out.
func (rq *request) remainingAt(now time.Time) time.Duration {
	b := time.Duration(rq.settings.TimeBudget)
	if b <= 0 {
		return time.Duration(1<<63 - 1)
	}
	left := b - now.Sub(rq.start)
	if left == 0 {
		left = -1
	}
	return left
}

// armAttempt starts the timer, on the proxy's clock, that cuts an attempt:
// request_timeout, or what is left of the budget when that is sooner. It
// returns nil when neither applies.
func (p *Proxy) armAttempt(rq *request, cancel context.CancelCauseFunc) clockwork.Timer {
	d, cause := p.timeout, errRequestTimeout
	if rq.settings.TimeBudget > 0 {
		if left := rq.remainingAt(p.clock.Now()); d <= 0 || left < d {
			d, cause = max(left, time.Millisecond), errBudget
		}
	}
	if d <= 0 {
		return nil
	}
	return p.clock.AfterFunc(d, func() { cancel(cause) })
}

// armBudget starts the timer, on the proxy's clock, that cuts a stream not
// yet committed when the budget runs out; nil without a budget.
func (p *Proxy) armBudget(rq *request, cancel context.CancelCauseFunc) clockwork.Timer {
	if rq.settings.TimeBudget <= 0 {
		return nil
	}
	d := max(rq.remainingAt(p.clock.Now()), time.Millisecond)
	return p.clock.AfterFunc(d, func() { cancel(errBudget) })
}

// stopTimer stops t and reports whether it had already fired.
func stopTimer(t clockwork.Timer) bool {
	return t != nil && !t.Stop()
}

// failureClass says why an attempt got no usable answer: the client left,
// our own timers cut it, or the network failed.
func failureClass(r *http.Request, ctx context.Context, err error) (class domain.Class, budget bool) {
	if r.Context().Err() != nil {
		return domain.ClassCanceled, false
	}
	switch context.Cause(ctx) {
	case errBudget:
		return domain.ClassTimeout, true
	case errRequestTimeout:
		return domain.ClassTimeout, false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return domain.ClassTimeout, false
	}
	return domain.ClassConnection, false
}

// report publishes the outcome of a hop. An attempt cut by the time budget
// is reported as canceled: the budget is the request's, not the
// credential's fault.
func (p *Proxy) report(rq *request, h *hop, attempt int, budget bool) {
	class := h.class
	if budget {
		class = domain.ClassCanceled
	}
	o := domain.Outcome{
		Credential:   h.cand.cred.name,
		Model:        rq.model,
		Status:       h.status,
		Class:        class,
		LatencyMS:    h.ms,
		Attempt:      attempt,
		RequestID:    rq.id,
		RetryAfterMS: h.retryAfter.Milliseconds(),
		Proxy:        h.cand.cred.proxy,
		BodyUnsent:   h.bodyUnsent,
		Tokens:       h.usage.tokens(),
		Replica:      p.probes.replica,
	}
	p.record(o)
	p.endAttempt(h, class)
	p.metrics.Attempt(o.Credential, o.Model, rq.ep.String(), o.Code(), time.Duration(h.ms)*time.Millisecond)
}

// fail records a hop that got no usable answer and reports whether the
// client has been dealt with (it left).
func (p *Proxy) fail(rq *request, h hop, budget bool) bool {
	rq.hops = append(rq.hops, h)
	p.report(rq, &rq.hops[len(rq.hops)-1], len(rq.hops), budget)
	if h.class != domain.ClassCanceled && !budget {
		h.cand.lastFail.Store(p.clock.Now().UnixNano())
	}
	if budget {
		rq.budgetOut = true
	}
	if h.class == domain.ClassCanceled {
		return true
	}
	p.log.Debug("upstream attempt failed", "request_id", rq.id, "credential", h.cand.cred.name,
		"model", rq.model, "attempt", len(rq.hops), "status", h.status, "class", h.class, "error", h.msg)
	return false
}
