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
	// StoreFault names why the store cannot write ("store full: ...");
	// "" while it writes. Writable is false while it is set.
	// StoreRestarts counts JetStream restarts on the embedded store after
	// a fault was cleared by freeing space.
	StoreFault    string
	StoreRestarts uint64
	// ServerProcess reports whether the embedded server runs in a process
	// of its own (Options.Process); ServerPID is that process, 0 while
	// none serves (between a process's end and its successor's start).
	// ServerRestarts counts the times it was started again after it
	// exited (a crash, a store fault it recovers from, or silence).
	ServerProcess  bool
	ServerPID      int
	ServerRestarts uint64
	// HoldsQuietRounds reports whether rounds of successful outcomes are
	// held longer (Log.HoldQuietRounds).
	HoldsQuietRounds bool
	// LastError is the most recent publish, consume or connection error,
	// "" if none.
	LastError string
}

// lastError keeps the most recent error of any part of a log (connection,
// publisher, consumers) for Stats.LastError.
type lastError struct {
	p atomic.Pointer[string]
}

func (e *lastError) set(err error) {
	s := err.Error()
	e.p.Store(&s)
}

func (e *lastError) String() string {
	if p := e.p.Load(); p != nil {
		return *p
	}
	return ""
}

// pubCounters are the publisher's loss and delivery counters.
type pubCounters struct {
	published atomic.Uint64
	dropped   atomic.Uint64
	failed    atomic.Uint64
	rejected  atomic.Uint64
}

// checkInterval is how often a log logs its losses (at most one line) and
// looks for stalled consumers (consume_watch.go).
const checkInterval = time.Second

// lossReporter logs one line per interval when events were dropped,
// failed or rejected since the previous line: never silent, never a storm.
type lossReporter struct {
	log  hclog.Logger
	c    *pubCounters
	errs *lastError

	mu                        sync.Mutex
	dropped, failed, rejected uint64
}

func newLossReporter(log hclog.Logger, c *pubCounters, errs *lastError) *lossReporter {
	return &lossReporter{log: log, c: c, errs: errs}
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
		"last_error", r.errs.String())
	r.dropped, r.failed, r.rejected = d, f, rj
}

// ticker runs a log's periodic checks on one goroutine until stop.
type ticker struct {
	stopping chan struct{}
	done     chan struct{}
}

// startTicker calls check every interval.
func startTicker(interval time.Duration, check func()) *ticker {
	t := &ticker{stopping: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(t.done)
		tk := time.NewTicker(interval)
		defer tk.Stop()
		for {
			select {
			case <-tk.C:
				check()
			case <-t.stopping:
				return
			}
		}
	}()
	return t
}

// stop ends the checks and waits for one that is running.
func (t *ticker) stop() {
	close(t.stopping)
	<-t.done
}
