package eventlog

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Stats are the log's counters since Open.
type Stats struct {
	// Published: outcome events acknowledged by the stream.
	Published uint64
	// Dropped: events Publish refused because the queue was full or the
	// log was closing, plus events still queued when Close gave up.
	Dropped uint64
	// Failed: asynchronous publishes that failed or timed out (their fate is
	// unknown: some may be stored).
	Failed uint64
	// Rejected: events Publish refused as invalid (no subject, bad payload).
	Rejected uint64
	// Pending: events waiting in the queue, in the publisher's hand, or
	// to be sent again after the stream left them unanswered; InFlight:
	// messages (a batch is one) sent, not yet acked.
	Pending  int
	InFlight int
	// Undecodable: consumed messages that were not JSON events. Skipped:
	// consumed events of an unknown kind, newer version or bad payload.
	Undecodable uint64
	Skipped     uint64
	// Connected reports the NATS connection's state. Writable is stricter:
	// connected, and the events stream answered the last publish (false
	// while a restarted cluster has no stream leader yet).
	Connected bool
	Writable  bool
	// LastError is the most recent publish or connection error, "" if none.
	LastError string
}

type counters struct {
	published   atomic.Uint64
	dropped     atomic.Uint64
	failed      atomic.Uint64
	rejected    atomic.Uint64
	undecodable atomic.Uint64
	skipped     atomic.Uint64
	lastErr     atomic.Pointer[string]
}

func (c *counters) setLastError(err error) {
	s := err.Error()
	c.lastErr.Store(&s)
}

func (c *counters) lastError() string {
	if p := c.lastErr.Load(); p != nil {
		return *p
	}
	return ""
}

// Stats returns a snapshot of the counters.
func (l *Log) Stats() Stats {
	s := Stats{
		Published:   l.published.Load(),
		Dropped:     l.dropped.Load(),
		Failed:      l.failed.Load(),
		Rejected:    l.rejected.Load(),
		Pending:     len(l.queue) + int(l.unsent.Load()),
		Undecodable: l.undecodable.Load(),
		Skipped:     l.skipped.Load(),
		LastError:   l.lastError(),
	}
	if l.js != nil {
		s.InFlight = l.js.PublishAsyncPending()
	}
	if l.nc != nil {
		s.Connected = l.nc.IsConnected()
		s.Writable = l.writable()
	}
	return s
}

// reportInterval is how often losses are logged, at most one line each.
const reportInterval = time.Second

// lossReporter logs one line per interval when events were dropped,
// failed or rejected since the previous line: never silent, never a storm.
type lossReporter struct {
	log hclog.Logger
	c   *counters

	mu                        sync.Mutex
	dropped, failed, rejected uint64
}

func newLossReporter(log hclog.Logger, c *counters) *lossReporter {
	return &lossReporter{log: log, c: c}
}

func (r *lossReporter) tick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	d, f, rj := r.c.dropped.Load(), r.c.failed.Load(), r.c.rejected.Load()
	if d == r.dropped && f == r.failed && rj == r.rejected {
		return
	}
	r.log.Warn("events lost",
		"dropped", d-r.dropped, "failed", f-r.failed, "rejected", rj-r.rejected,
		"dropped_total", d, "failed_total", f, "rejected_total", rj,
		"last_error", r.c.lastError())
	r.dropped, r.failed, r.rejected = d, f, rj
}

func (l *Log) reportLoop() {
	defer close(l.tickDone)
	t := time.NewTicker(reportInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			l.reporter.tick()
			l.watchConsumers()
		case <-l.stopTick:
			return
		}
	}
}
