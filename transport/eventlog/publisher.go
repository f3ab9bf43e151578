package eventlog

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go/jetstream"
)

// The JetStream client's asynchronous publishing. Up to asyncMaxPending
// messages may wait for their acknowledgement: a small window keeps the
// time from publish to ack short (a consumer sees an outcome soon after it
// happened), and with batches of outcomes it still lets the stream store
// what the publisher sends. asyncTimeout bounds the wait for one ack, so no
// publish stays pending forever when the connection goes away.
const (
	asyncMaxPending = 2048
	asyncTimeout    = 5 * time.Second
)

// publisher is the log's write side: the bounded queue Publish feeds, the
// one goroutine that drains it into the JetStream client in batches
// (batch.go), the hold and resend of events while the stream cannot take
// them (outage.go), the synchronous control publishes (control.go) and the
// counters of what was stored, dropped, failed and rejected.
type publisher struct {
	conn  *conn
	log   hclog.Logger
	errs  *lastError
	clock clockwork.Clock // times the rounds (linger)

	queue *pubQueue
	// retry holds publishes nobody answered, sent again first. It is a
	// channel of pointers: a channel's buffer is allocated whole and its
	// ring written end to end, so whole pubItems would keep retryCap of
	// them resident.
	retry chan *pubItem
	// items are queue entries the batch has copied out, for publish to
	// reuse with their buffers (the goroutine puts, publish gets).
	items    sync.Pool
	closing  atomic.Bool // Publish and Flush refuse
	started  atomic.Bool
	stopping chan struct{} // closed by stop: drain the queue and end
	abort    chan struct{} // closed by stop when its deadline passes
	done     chan struct{} // closed when the goroutine has ended

	// holdQuiet lets linger hold a round of successful outcomes up to
	// quietLinger (Log.HoldQuietRounds).
	holdQuiet atomic.Bool
	// streamDown is whether the stream left the last publish unanswered.
	streamDown atomic.Bool
	// store is the store's health: a full store holds events (store.go).
	store storeState
	// unsent counts the events taken from the queue (or sent back to the
	// retry queue) and not yet handed to the client: Stats.Pending.
	unsent atomic.Int64

	batch    batch        // the goroutine's
	subjects subjectCache // the goroutine's

	counts   pubCounters
	reporter *lossReporter
}

func newPublisher(c *conn, log hclog.Logger, errs *lastError, queueSize int, clock clockwork.Clock) *publisher {
	p := &publisher{
		conn:     c,
		log:      log,
		errs:     errs,
		clock:    clock,
		queue:    newPubQueue(queueSize),
		retry:    make(chan *pubItem, retryCap),
		stopping: make(chan struct{}),
		abort:    make(chan struct{}),
		done:     make(chan struct{}),
	}
	p.reporter = newLossReporter(log, &p.counts, errs)
	p.batch.send = p.publishAsync
	p.batch.done = p.reuse
	return p
}

// jetStreamOpts configure the JetStream context the publisher publishes
// through: its in-flight window and its ack and error handlers.
func (p *publisher) jetStreamOpts() []jetstream.JetStreamOpt {
	return []jetstream.JetStreamOpt{
		jetstream.WithPublishAsyncMaxPending(asyncMaxPending),
		jetstream.WithPublishAsyncTimeout(asyncTimeout),
		jetstream.WithPublishAsyncErrHandler(p.asyncErr),
		jetstream.WithPublishAsyncAckHandler(p.asyncAck),
	}
}

// start runs the publisher goroutine, once the connection is open.
func (p *publisher) start() {
	if !p.started.CompareAndSwap(false, true) {
		return
	}
	p.batch.maxBytes = batchLimit(p.conn.cur().nc.MaxPayload())
	go p.run()
}

// stop refuses new events, lets the goroutine empty the queue (until ctx is
// done, then makes it give up), counts what is left as dropped, and waits
// for the outstanding acks (until ctx is done, then forgets them).
func (p *publisher) stop(ctx context.Context) {
	p.closing.Store(true)
	if p.started.CompareAndSwap(false, true) {
		close(p.done) // never started: nothing to wait for
	}
	close(p.stopping)
	select {
	case <-p.done:
	case <-ctx.Done():
		close(p.abort)
		<-p.done
	}
	p.discardQueue()
	select {
	case <-p.conn.cur().js.PublishAsyncComplete():
	case <-ctx.Done():
		p.log.Warn("giving up on unacknowledged events", "pending", p.conn.cur().js.PublishAsyncPending())
		p.conn.cur().js.CleanupPublisher()
	}
}

// discardQueue counts what the goroutine left in the queue (and in the
// retry queue) as dropped and releases waiting Flush calls.
func (p *publisher) discardQueue() {
	for {
		select {
		case it := <-p.retry:
			p.unsent.Add(-int64(it.events))
			p.counts.dropped.Add(uint64(it.events))
			continue
		default:
		}
		it, ok := p.queue.take()
		switch {
		case !ok:
			return
		case it.flushed != nil:
			close(it.flushed)
		default:
			p.counts.dropped.Add(1)
		}
	}
}

// run is the one goroutine that drains the queue into PublishAsync,
// publishes that nobody answered first (outage.go). On stop it empties
// the queue, unless stop's deadline passes first or the log does not take
// events.
func (p *publisher) run() {
	defer close(p.done)
	for {
		select {
		case it := <-p.retry:
			p.handleItem(*it)
			continue
		case <-p.stopping:
			p.finish()
			return
		default:
		}
		if it, ok := p.queue.take(); ok {
			p.unsent.Add(int64(it.events))
			if it.flushed == nil && p.queue.len() < lingerUnder {
				p.linger(it)
			}
			p.drain(it)
			continue
		}
		select {
		case it := <-p.retry:
			p.handleItem(*it)
		case <-p.queue.ready:
		case <-p.stopping:
			p.finish()
			return
		}
	}
}

// finish publishes what is still queued when stop begins, until the queue
// is empty or stop gives up.
func (p *publisher) finish() {
	for {
		select {
		case it := <-p.retry:
			p.handleItem(*it)
			continue
		case <-p.abort:
			return
		default:
		}
		it, ok := p.queue.take()
		if !ok {
			return
		}
		p.unsent.Add(int64(it.events))
		p.drain(it)
	}
}

// lingerDelay is how long the publisher holds the first event of a round
// before sending what is queued, so that the outcomes of a burst go out
// together, batched per pair (batch.go). Storing, acknowledging and
// delivering a message costs the log about the same whatever it carries, so
// the number of messages, not of events, is what the log costs the proxy
// (BenchmarkLogCostAtRate measures it); a longer wait makes bigger batches.
// The wait stays short for anything that may change routing: while a
// failing pair's outcomes wait, requests still go to it (and fail over)
// until the ban they lead to is folded. A round of successful outcomes
// alone (Publish; PublishPrompt marks a success that may lift a ban) is
// held up to quietLinger, until an event of any other kind, a prompt one,
// a Flush, a resend or lingerUnder events are queued: a healthy pool sends
// two rounds a second, or one per lingerUnder outcomes, instead of fifty.
// A round wakes the router's publisher, client and fold and the server's
// store and delivery in turn, a few hundred µs of CPU in all whatever it
// carries, so below lingerUnder outcomes per quietLinger the hold, not the
// rate, sets what the log costs. The price is that a success reaches the
// fold (and /health) up to quietLinger after it was recorded, and that a
// router killed outright loses up to that much of its successes (a stop
// flushes them).
// It does so only while told the router is the log's one replica
// (Log.HoldQuietRounds): other replicas count its requests against shared
// rate limits from those outcomes. lingerUnder skips the wait when a
// round's worth is already queued, which also bounds what one fold runs at
// once.
const (
	lingerDelay = 20 * time.Millisecond
	quietLinger = 500 * time.Millisecond
	lingerUnder = 256
)

// linger waits lingerDelay from the round's first item; then, while first
// was a successful outcome and the round stays quiet (quietRound), until
// quietLinger has passed. It returns early when the log is stopping.
func (p *publisher) linger(first *pubItem) {
	t := p.clock.NewTimer(lingerDelay)
	defer t.Stop()
	select {
	case <-t.Chan():
	case <-p.stopping:
		return
	}
	if first.prompt {
		return
	}
	t.Reset(quietLinger - lingerDelay)
	for p.quietRound() {
		select {
		case <-t.Chan():
			return
		case <-p.queue.hurry:
		case <-p.stopping:
			return
		}
	}
}

// quietRound reports whether the round may be held on: quiet rounds are
// held, the queue holds only successful outcomes, fewer than lingerUnder,
// and nothing waits to be sent again.
func (p *publisher) quietRound() bool {
	return p.holdQuiet.Load() && p.queue.quiet() && len(p.retry) == 0
}

// handleItem publishes it, or for a Flush marker waits until everything
// handed to the client before it is acknowledged.
func (p *publisher) handleItem(it pubItem) {
	if it.flushed == nil {
		p.publishAsync(it)
		return
	}
	defer close(it.flushed)
	for {
		select {
		case <-p.conn.cur().js.PublishAsyncComplete():
		case <-it.ctx.Done():
			return
		case <-p.abort:
			return
		}
		// Publishes nobody answered came back before completion was
		// signalled; they were queued before the flush, so send them too.
		select {
		case r := <-p.retry:
			p.publishAsync(*r)
		default:
			return
		}
	}
}

// addStats fills the publisher's part of s.
func (p *publisher) addStats(s *Stats) {
	s.Published = p.counts.published.Load()
	s.Dropped = p.counts.dropped.Load()
	s.Failed = p.counts.failed.Load()
	s.Rejected = p.counts.rejected.Load()
	s.Pending = p.queue.len() + int(p.unsent.Load())
	if p.conn.cur().js != nil {
		s.InFlight = p.conn.cur().js.PublishAsyncPending()
	}
	s.Writable = p.writable()
	s.StoreFault = p.store.get()
	s.StoreRestarts = p.store.restarts.Load()
	s.HoldsQuietRounds = p.holdQuiet.Load()
}
