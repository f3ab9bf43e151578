package eventlog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Outage handling. While the log cannot take events, the publisher holds
// them in its bounded queue instead of handing them to the NATS client:
// there they would wait for their ack timeout and fail with an unknown fate
// (stored or not), and count as failed. Publish keeps never blocking and
// drops, counted and logged, once the queue is full. The log cannot take
// events when the connection is down (every server of an external cluster
// unreachable) or when the stream had no leader to answer the last publish
// (a cluster still electing after a restart): a publish that nobody
// answered ("no responders") was not stored by anyone, so it is published
// again, first, when the stream answers once more. Publishes that were in
// flight when the connection dropped, or that timed out, may or may not be
// stored; they stay counted as failed (outcomes are at-most-once).
const (
	// connectedPoll is how often a publisher waiting for the connection
	// looks again; the client reconnects on its own.
	connectedPoll = 50 * time.Millisecond
	// probeFirst and probeMax bound the backoff between asking a stream
	// that refused publishes whether it has a leader again; probeTimeout
	// bounds one question.
	probeFirst   = 100 * time.Millisecond
	probeMax     = 2 * time.Second
	probeTimeout = 2 * time.Second
	// retryCap bounds the publishes waiting to be sent again. Only
	// in-flight publishes can come back, so two windows' worth never
	// fills; beyond it a publish counts as failed.
	retryCap = 2 * asyncMaxPending
)

// writable reports whether the log takes events now: connected, the
// stream answered the last publish or probe, and its store is not full
// (Stats.Writable).
func (p *publisher) writable() bool {
	return p.conn.connected() && !p.streamDown.Load() && p.store.get() == ""
}

// waitWritable blocks the publisher until the log takes events. It returns
// false, without waiting, when stop has begun and the log does not take
// events now (shutdown never waits for an outage to end), or when stop
// gave up.
func (p *publisher) waitWritable() bool {
	if p.writable() {
		return true
	}
	wait := probeFirst
	for {
		switch {
		case !p.conn.cur().nc.IsConnected():
			wait = connectedPoll
		case p.streamDown.Load():
			if p.probeStream() {
				return true
			}
		case p.storeHeld():
			wait = connectedPoll
		default:
			return true
		}
		select {
		case <-p.stopping:
			return false
		case <-p.abort:
			return false
		default:
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-p.stopping:
			t.Stop()
		case <-p.abort:
			t.Stop()
			return false
		}
		if p.streamDown.Load() && p.conn.cur().nc.IsConnected() {
			wait = min(2*wait, probeMax)
		}
	}
}

// probeStream asks the events stream for its state; an answer means it has
// a leader again and publishing resumes.
func (p *publisher) probeStream() bool {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	done := make(chan struct{})
	defer close(done)
	go func() { // stop giving up ends the probe too
		select {
		case <-p.abort:
			cancel()
		case <-done:
		}
	}()
	if _, err := p.conn.cur().events.Info(ctx); err != nil {
		return false
	}
	if p.streamDown.Swap(false) {
		p.log.Info("the events stream answers again; publishing resumes", "waiting_retry", len(p.retry), "queued", p.queue.len())
	}
	return true
}

// requeue takes back a publish that no server answered, to send it again
// once the stream has a leader. It reports false when there is no room.
func (p *publisher) requeue(m *nats.Msg) bool {
	if p.closing.Load() {
		return false
	}
	if !p.streamDown.Swap(true) {
		p.log.Warn("the events stream does not answer (no leader?); holding events until it does",
			"subject", m.Subject)
	}
	return p.hold(m)
}

// hold queues m to be sent again first; it reports false when there is no
// room.
func (p *publisher) hold(m *nats.Msg) bool {
	if p.closing.Load() {
		return false
	}
	it := &pubItem{subject: m.Subject, data: m.Data, events: eventsIn(m.Subject, m.Data)}
	p.unsent.Add(int64(it.events))
	select {
	case p.retry <- it:
		wake(p.queue.hurry) // a resend does not wait out a quiet round
		return true
	default:
		p.unsent.Add(-int64(it.events))
		return false
	}
}

// asyncErr counts a failed asynchronous publish, unless it can be sent
// again safely (nobody received it).
func (p *publisher) asyncErr(_ jetstream.JetStream, m *nats.Msg, err error) {
	if errors.Is(err, jetstream.ErrNoStreamResponse) && p.requeue(m) {
		return
	}
	// A store with no room refused it: nothing was stored, so it is held
	// and sent again when the store takes events.
	if p.reportStoreFull(err) && p.hold(m) {
		return
	}
	p.counts.failed.Add(uint64(eventsIn(m.Subject, m.Data)))
	p.errs.set(fmt.Errorf("publish event on %s: %w", m.Subject, err))
}
