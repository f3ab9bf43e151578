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
// them in its bounded queue instead of handing them to the NATS client, where
// they would time out with an unknown fate (jetstream.md §4.3); Publish keeps
// never blocking and drops, counted and logged, once the queue is full. The
// log cannot take events when the connection is down (every server of an
// external cluster unreachable) or when the stream had no leader to answer
// the last publish (a cluster still electing after a restart): a publish
// that nobody answered ("no responders") was not stored by anyone, so it is
// published again, first, when the stream answers once more. Publishes that
// were in flight when the connection dropped, or that timed out, may or may
// not be stored; they stay counted as failed (outcomes are at-most-once).
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

// errUnreachable is returned by queries made while the connection is down,
// instead of waiting for their timeout.
var errUnreachable = errors.New("the event log is unreachable (not connected to NATS)")

// reconnecting reports whether the connection is down and the client is
// trying to get it back; requests made now would wait for their timeout.
// A closed connection is not reconnecting: requests fail at once, saying
// it is closed.
func (l *Log) reconnecting() bool {
	return l.nc != nil && (l.nc.IsReconnecting() || l.nc.Status() == nats.CONNECTING)
}

// writable reports whether the log takes events now: connected, and the
// stream answered the last publish or probe (Stats.Writable).
func (l *Log) writable() bool {
	return l.nc != nil && l.nc.IsConnected() && !l.streamDown.Load()
}

// waitWritable blocks the publisher until the log takes events. It returns
// false, without waiting, when Close has begun and the log does not take
// events now (shutdown never waits for an outage to end), or when Close
// gave up.
func (l *Log) waitWritable() bool {
	if l.writable() {
		return true
	}
	wait := probeFirst
	for {
		switch {
		case !l.nc.IsConnected():
			wait = connectedPoll
		case l.streamDown.Load():
			if l.probeStream() {
				return true
			}
		default:
			return true
		}
		select {
		case <-l.stopPub:
			return false
		case <-l.abortPub:
			return false
		default:
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-l.stopPub:
			t.Stop()
		case <-l.abortPub:
			t.Stop()
			return false
		}
		if l.streamDown.Load() && l.nc.IsConnected() {
			wait = min(2*wait, probeMax)
		}
	}
}

// probeStream asks the events stream for its state; an answer means it has
// a leader again and publishing resumes.
func (l *Log) probeStream() bool {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	done := make(chan struct{})
	defer close(done)
	go func() { // Close giving up ends the probe too
		select {
		case <-l.abortPub:
			cancel()
		case <-done:
		}
	}()
	if _, err := l.events.Info(ctx); err != nil {
		return false
	}
	if l.streamDown.Swap(false) {
		l.log.Info("the events stream answers again; publishing resumes", "waiting_retry", len(l.retry), "queued", len(l.queue))
	}
	return true
}

// requeue takes back a publish that no server answered, to send it again
// once the stream has a leader. It reports false when there is no room.
func (l *Log) requeue(m *nats.Msg) bool {
	if l.closing.Load() {
		return false
	}
	if !l.streamDown.Swap(true) {
		l.log.Warn("the events stream does not answer (no leader?); holding events until it does",
			"subject", m.Subject)
	}
	it := pubItem{subject: m.Subject, data: m.Data, events: eventsIn(m.Subject, m.Data)}
	l.unsent.Add(int64(it.events))
	select {
	case l.retry <- it:
		return true
	default:
		l.unsent.Add(-int64(it.events))
		return false
	}
}

// asyncErr counts a failed asynchronous publish, unless it can be sent
// again safely (nobody received it).
func (l *Log) asyncErr(_ jetstream.JetStream, m *nats.Msg, err error) {
	if errors.Is(err, jetstream.ErrNoStreamResponse) && l.requeue(m) {
		return
	}
	l.failed.Add(uint64(eventsIn(m.Subject, m.Data)))
	l.setLastError(fmt.Errorf("publish event on %s: %w", m.Subject, err))
}
