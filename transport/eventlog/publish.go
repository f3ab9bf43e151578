package eventlog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// pubItem is one queued event, a batch of them on their way to the client
// (events > 1, see batch.go), or a Flush marker (flushed != nil). A queued
// outcome names its pair instead of its subject: the publisher goroutine
// looks the subject up (subjectCache), off the request path.
type pubItem struct {
	subject string
	pair    domain.Key
	data    []byte
	events  int
	flushed chan struct{}
	ctx     context.Context
}

// Publish queues an event for asynchronous publishing and never blocks. It
// returns false, and counts the event, when the queue is full, the log is
// closing, or the event is invalid. The event is encoded on the caller's
// goroutine, so the single publisher goroutine only does I/O. Delivery is
// at-most-once: use PublishControl for events that must not be lost.
func (l *Log) Publish(ev domain.Event) bool {
	if l.closing.Load() || len(l.queue) == cap(l.queue) {
		l.dropped.Add(1)
		return false
	}
	item, err := encodeItem(ev)
	if err != nil {
		l.rejected.Add(1)
		l.setLastError(err)
		return false
	}
	select {
	case l.queue <- item:
		return true
	default:
		l.dropped.Add(1)
		return false
	}
}

func encodeItem(ev domain.Event) (pubItem, error) {
	if err := ev.Valid(); err != nil {
		return pubItem{}, fmt.Errorf("publish event: %w", err)
	}
	data, err := domain.Encode(ev)
	if err != nil {
		return pubItem{}, fmt.Errorf("encode %s event: %w", ev.Kind, err)
	}
	if ev.Kind == domain.KindOutcomeRecorded {
		return pubItem{pair: ev.Outcome.Key(), data: data, events: 1}, nil
	}
	return pubItem{subject: Subject(ev), data: data, events: 1}, nil
}

// maxCachedSubjects bounds the publisher's subject cache; past it the
// cache starts over.
const maxCachedSubjects = 4096

// subjectCache maps pairs to their outcome subjects. The publisher
// goroutine owns it.
type subjectCache map[domain.Key]string

// resolve sets it's subject from its pair when it has none.
func (c *subjectCache) resolve(it *pubItem) {
	if it.subject != "" || it.flushed != nil {
		return
	}
	if s, ok := (*c)[it.pair]; ok {
		it.subject = s
		return
	}
	if *c == nil || len(*c) >= maxCachedSubjects {
		*c = make(subjectCache)
	}
	it.subject = pairSubject("outcome.", it.pair.Credential, it.pair.Model)
	(*c)[it.pair] = it.subject
}

// publisher is the one goroutine that drains the queue into PublishAsync,
// publishes that nobody answered first (outage.go). On Close it empties
// the queue, unless Close's deadline passes first or the log does not take
// events.
func (l *Log) publisher() {
	defer close(l.pubDone)
	for {
		select {
		case it := <-l.retry:
			l.handleItem(it)
			continue
		default:
		}
		select {
		case it := <-l.retry:
			l.handleItem(it)
		case it := <-l.queue:
			l.unsent.Add(int64(it.events))
			if it.flushed == nil && len(l.queue) < lingerUnder {
				l.linger()
			}
			l.drain(it)
		case <-l.stopPub:
			for {
				select {
				case it := <-l.retry:
					l.handleItem(it)
				case it := <-l.queue:
					l.unsent.Add(int64(it.events))
					l.drain(it)
				case <-l.abortPub:
					return
				default:
					return
				}
			}
		}
	}
}

// lingerDelay is how long the publisher holds the first event of a round
// before sending what is queued, so that the events of a burst go out
// together, batched per pair (batch.go). Storing, acknowledging and
// delivering a message costs the log about the same whatever it carries,
// so at a few thousand requests a second one message per event cost ~30 µs
// of CPU per request; batches of ~35 (10 ms) cost the log ~8 % of a
// proxied request's CPU, of ~65 (25 ms) 6 %, of ~130 (50 ms) 5.5 %
// (BenchmarkProxyOverhead in transport/proxy). 20 ms is the compromise:
// outcomes are statistics, but while a failing pair's outcomes wait,
// requests still go to it (and fail over), so the wait is not stretched
// further for the last half percent. lingerUnder skips the wait when a
// round's worth is already queued.
const (
	lingerDelay = 20 * time.Millisecond
	lingerUnder = 256
)

// linger waits lingerDelay, or less when the log is stopping.
func (l *Log) linger() {
	t := time.NewTimer(lingerDelay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-l.stopPub:
	}
}

func (l *Log) handleItem(it pubItem) {
	if it.flushed == nil {
		l.publishAsync(it)
		return
	}
	defer close(it.flushed)
	for {
		select {
		case <-l.js.PublishAsyncComplete():
		case <-it.ctx.Done():
			return
		case <-l.abortPub:
			return
		}
		// Publishes nobody answered came back before completion was
		// signalled; they were queued before the flush, so send them too.
		select {
		case r := <-l.retry:
			l.publishAsync(r)
		default:
			return
		}
	}
}

// Flush waits until every event queued before the call has been
// acknowledged, has failed, or was dropped by Close. It is for tools and tests, never the request
// path: it waits for room in the queue, and while the log is unreachable
// it waits for the log to come back (or ctx).
func (l *Log) Flush(ctx context.Context) error {
	if l.closing.Load() {
		return errors.New("flush events: the event log is closed")
	}
	it := pubItem{flushed: make(chan struct{}), ctx: ctx}
	select {
	case l.queue <- it:
	case <-ctx.Done():
		return fmt.Errorf("flush events: %w", ctx.Err())
	case <-l.pubDone:
		return errors.New("flush events: the event log is closed")
	}
	select {
	case <-it.flushed:
		if ctx.Err() != nil {
			return fmt.Errorf("flush events: %w", ctx.Err())
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("flush events: %w", ctx.Err())
	case <-l.pubDone:
		return errors.New("flush events: the event log closed before the flush finished")
	}
}

// publishAsync hands it to the NATS client, waiting while the log does not
// take events. it's events are counted in unsent until then.
func (l *Log) publishAsync(it pubItem) {
	defer l.unsent.Add(-int64(it.events))
	for {
		if !l.waitWritable() {
			l.dropped.Add(uint64(it.events))
			return
		}
		_, err := l.js.PublishAsync(it.subject, it.data)
		if err == nil {
			return
		}
		// Too many unacknowledged publishes: the server is slow. Wait
		// again (the queue absorbs the stall and drops beyond it) unless
		// Close has given up.
		if errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
			select {
			case <-l.abortPub:
			default:
				continue
			}
		}
		l.failed.Add(uint64(it.events))
		l.setLastError(fmt.Errorf("publish event on %s: %w", it.subject, err))
		return
	}
}

func (l *Log) asyncAck(_ jetstream.JetStream, m *nats.Msg, _ *jetstream.PubAck) {
	l.published.Add(uint64(eventsIn(m.Subject, m.Data)))
}

// Control publish retries: a few attempts with doubling backoff, each
// bounded, all within the caller's ctx and well within DuplicateWindow.
const (
	controlAttempts       = 5
	controlAttemptTimeout = 2 * time.Second
	controlFirstBackoff   = 50 * time.Millisecond
)

// errCodeDuplicateInProcess is the server's answer when a message with the
// same Nats-Msg-Id is still being stored (a replicated stream, two replicas
// publishing the same decision at once). The retry is answered as a
// duplicate of the stored message, with its sequence.
const errCodeDuplicateInProcess jetstream.ErrorCode = 10158

// PublishControl publishes a ban, unban, cooldown, bench or settings event
// synchronously with Nats-Msg-Id set to ev.ID, retrying transient failures
// with backoff within ctx; while the connection is down it gives up after
// the retries' backoff (under a second). It returns the event's stream
// sequence; when the ID was already stored within DuplicateWindow it
// returns the original sequence and publishes nothing.
func (l *Log) PublishControl(ctx context.Context, ev domain.Event) (uint64, error) {
	if ev.ID == "" {
		return 0, fmt.Errorf("publish %s event: the event has no ID to deduplicate on", ev.Kind)
	}
	it, err := encodeItem(ev)
	if err != nil {
		return 0, err
	}
	it.subject = Subject(ev)
	backoff := controlFirstBackoff
	var last error
	for attempt := 1; attempt <= controlAttempts; attempt++ {
		// While disconnected a publish would wait in the client's buffer
		// until its timeout; fail the attempt at once instead, so a
		// caller learns of an outage in under a second.
		err := errUnreachable
		if !l.reconnecting() {
			actx, cancel := context.WithTimeout(ctx, controlAttemptTimeout)
			var ack *jetstream.PubAck
			ack, err = l.js.Publish(actx, it.subject, it.data, jetstream.WithMsgID(ev.ID))
			cancel()
			if err == nil {
				return ack.Sequence, nil
			}
		}
		last = err
		var apiErr *jetstream.APIError
		if (errors.As(err, &apiErr) && apiErr.ErrorCode != errCodeDuplicateInProcess) || ctx.Err() != nil || attempt == controlAttempts {
			break // the server said no, or no time is left
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		backoff *= 2
	}
	err = fmt.Errorf("publish %s event %q on %s: %w", ev.Kind, ev.ID, it.subject, last)
	l.setLastError(err)
	return 0, err
}
