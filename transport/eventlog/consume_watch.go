package eventlog

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A stalled consumer is replaced. The client library re-creates an ordered
// consumer itself after missed heartbeats or a reconnect, but a creation
// request sent while the cluster elects a new leader waits out a fixed 10 s
// timeout before the next try, with backoff after it, so a replica could stop
// folding for 10 s or more after a cluster node left or the cluster came
// back. Once a second the log checks every unfiltered consumer: one that
// delivered nothing for stallTicks checks in a row while the stream held
// events past it is re-created from the sequence after the last one it
// delivered, while the stream answers. The old one is stopped; anything
// both deliver is passed to fn once (handle drops sequences already seen).
const (
	// stallTicks is how many one-second checks in a row a consumer must
	// be behind without progress before it is replaced.
	stallTicks = 2
	// restartTimeout bounds the creation of a replacement; on failure the
	// next check tries again.
	restartTimeout = 2 * time.Second
	// watchTimeout bounds the stream query of one check.
	watchTimeout = time.Second
)

// stall is a consumer's state for the stall check.
type stall struct {
	cfg        jetstream.OrderedConsumerConfig // as first created
	delivered  atomic.Uint64                   // last delivered stream sequence
	restarting atomic.Bool
	seen       atomic.Uint64 // delivered at the previous check
	behind     atomic.Int64  // checks in a row behind without progress
}

// consumeOpts are the options every consumption of the events stream uses.
func (c *consumer) consumeOpts() []jetstream.PullConsumeOpt {
	return []jetstream.PullConsumeOpt{
		jetstream.PullMaxBytes(pullMaxBytes),
		jetstream.PullHeartbeat(consumeHeartbeat),
		jetstream.ConsumeErrHandler(c.consumeErr),
	}
}

// watch runs the stall check; the log's ticker calls it once a second.
func (cs *consumers) watch() {
	if cs.conn.cur().js == nil || cs.conn.cur().events == nil || !cs.streamUp() {
		return // reconnecting is the client's job; the check resumes after
	}
	cs.mu.Lock()
	run := make([]*consumer, 0, len(cs.running))
	for c := range cs.running {
		if len(c.cfg.FilterSubjects) == 0 {
			run = append(run, c)
		}
	}
	cs.mu.Unlock()
	var last uint64
	known := false
	for _, c := range run {
		d := c.delivered.Load()
		progressed := c.seen.Swap(d) != d
		if progressed || (d == 0 && c.cfg.DeliverPolicy == jetstream.DeliverNewPolicy) {
			c.behind.Store(0) // moving, or waiting for its first new event
			continue
		}
		if !known {
			ctx, cancel := context.WithTimeout(context.Background(), watchTimeout)
			info, err := cs.conn.cur().events.Info(ctx)
			cancel()
			if err != nil {
				return
			}
			last, known = info.State.LastSeq, true
		}
		if cs.caughtUp(c.position(), last) {
			c.behind.Store(0)
			continue
		}
		if c.behind.Add(1) >= stallTicks && c.restarting.CompareAndSwap(false, true) {
			c.behind.Store(0)
			cs.restarts.Add(1)
			go c.restart()
		}
	}
}

// position is the stream sequence the consumer has passed: the last one it
// delivered, or the one before where it was asked to start.
func (c *consumer) position() uint64 {
	p := c.delivered.Load()
	if c.cfg.DeliverPolicy == jetstream.DeliverByStartSequencePolicy && c.cfg.OptStartSeq > 0 {
		p = max(p, c.cfg.OptStartSeq-1)
	}
	return p
}

// restart replaces a stalled consumption with a new ordered consumer from
// the sequence after the last delivered one.
func (c *consumer) restart() {
	defer c.set.restarts.Done()
	defer c.restarting.Store(false)
	if c.stopped.Load() || c.set.closing.Load() {
		return
	}
	cfg := c.cfg
	from := c.position() + 1
	if from > 1 {
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = from
		cfg.OptStartTime = nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), restartTimeout)
	defer cancel()
	oc, err := c.set.conn.cur().js.OrderedConsumer(ctx, EventsStream, cfg)
	if err != nil {
		c.consumeErr(nil, fmt.Errorf("replace a stalled consumer at seq %d: %w", from, err))
		return
	}
	cc, err := oc.Consume(c.handle, c.consumeOpts()...)
	if err != nil {
		c.consumeErr(nil, fmt.Errorf("replace a stalled consumer at seq %d: %w", from, err))
		return
	}
	c.ccMu.Lock()
	if c.stopped.Load() {
		c.ccMu.Unlock()
		cc.Stop()
		c.set.conn.release(oc)
		return
	}
	old, oldOC := c.cc, c.oc
	c.cc, c.oc = cc, oc
	c.ccMu.Unlock()
	c.set.log.Info("replaced a stalled event consumer", "from_seq", from)
	// Stopping the old one waits for the client's own re-creation attempt
	// to end (up to its 10 s timeout); nothing waits for that.
	go func() {
		old.Stop()
		c.set.conn.release(oldOC)
	}()
}

// replaceAll re-creates every running consumer from where it was, after
// the connection was replaced (redial.go): the old ones died with it.
func (cs *consumers) replaceAll() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closing.Load() {
		return
	}
	for c := range cs.running {
		if c.restarting.CompareAndSwap(false, true) {
			c.behind.Store(0)
			cs.restarts.Add(1)
			go c.restart()
		}
	}
}

// close makes Consume and Follow refuse and stops replacements from
// starting; under mu, so replaceAll adds none after it.
func (cs *consumers) close() {
	cs.mu.Lock()
	cs.closing.Store(true)
	cs.mu.Unlock()
}
