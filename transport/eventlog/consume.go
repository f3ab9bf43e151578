package eventlog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/nats-io/nats.go/jetstream"
)

// pullMaxBytes is the ordered consumer's read-ahead, in bytes. A count of
// messages (jetstream.md §3 measured 5000 best for single events) would
// buffer 5000 batch messages of up to 64 KiB, past the client's pending
// limits: the subscription then drops messages and the ordered consumer
// resets, over and over. By bytes, a 1M-event replay reads 1.2M events/s
// from batches and 286k/s from single-event messages (BenchmarkConsume1M).
const pullMaxBytes = 16 << 20

// consumeHeartbeat is the ordered consumer's idle heartbeat. Two missed
// ones make the client re-create the consumer where it left off, so a
// consumer lost with a cluster node (an R1 consumer lives on one node)
// resumes within seconds (the library's default is 5 s, so 10 s).
const consumeHeartbeat = time.Second

// EventFunc receives events in log order (domain.Pos), one call at a time.
// pending is how many messages the stream held after this event's message
// when it was delivered, plus the events still to come in its own batch,
// so 0 means caught up. An event with an empty Kind marks a skipped message
// (or line of a batch): only its position is meaningful.
type EventFunc func(ev domain.Event, pending uint64)

// consumer is one running ordered consumer.
type consumer struct {
	l       *Log
	fn      EventFunc
	from    uint64 // requested start sequence, for the gap warning
	mu      sync.Mutex
	last    uint64 // last delivered stream sequence
	stopped atomic.Bool
	unwatch func() bool
	errLog  atomic.Int64 // unix nanos of the last logged consume error
	dec     domain.Decoder

	// The running consumption, replaced when it stalls (consume_watch.go).
	ccMu sync.Mutex
	cc   jetstream.ConsumeContext
	stall
}

// Consume delivers every event from stream sequence fromSeq on (0 or 1:
// from the start) and then follows new ones, until stop is called, ctx is
// done or the log closes. When fromSeq lies before the oldest stored event,
// delivery starts at the oldest and a warning names the gap.
func (l *Log) Consume(ctx context.Context, fromSeq uint64, fn EventFunc) (stop func(), err error) {
	cfg := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}
	if fromSeq > 1 {
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = fromSeq
	}
	return l.consume(ctx, cfg, fromSeq, fn)
}

// Follow delivers only events published from now on whose subjects match
// subjects (nil: all events), e.g. BanSubjects(), until stop is called, ctx
// is done or the log closes.
func (l *Log) Follow(ctx context.Context, subjects []string, fn EventFunc) (stop func(), err error) {
	cfg := jetstream.OrderedConsumerConfig{
		DeliverPolicy:  jetstream.DeliverNewPolicy,
		FilterSubjects: subjects,
	}
	return l.consume(ctx, cfg, 0, fn)
}

func (l *Log) consume(ctx context.Context, cfg jetstream.OrderedConsumerConfig, from uint64, fn EventFunc) (func(), error) {
	if l.closing.Load() {
		return nil, errors.New("consume events: the event log is closed")
	}
	oc, err := l.js.OrderedConsumer(ctx, EventsStream, cfg)
	if err != nil {
		return nil, fmt.Errorf("create ordered consumer on %s: %w", EventsStream, err)
	}
	c := &consumer{l: l, fn: fn, from: from, stall: stall{cfg: cfg}}
	c.ccMu.Lock()
	cc, err := oc.Consume(c.handle, c.consumeOpts()...)
	if err != nil {
		c.ccMu.Unlock()
		return nil, fmt.Errorf("consume %s: %w", EventsStream, err)
	}
	c.cc = cc
	c.ccMu.Unlock()
	l.consMu.Lock()
	l.consumers[c] = struct{}{}
	l.consMu.Unlock()
	c.unwatch = context.AfterFunc(ctx, c.stop)
	return c.stopAndWait, nil
}

// stopAndWait is the stop func Consume and Follow return: it stops delivery
// and waits for a call of fn already running, so once it returns nothing
// runs fn any more and what fn wrote is visible to the caller (the wiring
// checkpoints the writer's state after it). It must not be called from
// within fn.
func (c *consumer) stopAndWait() {
	c.stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped.Store(true) // already true; the critical section is the wait
}

// stop ends delivery. A call of fn already running may finish; none starts
// after stop returns. It may be called from within fn.
func (c *consumer) stop() {
	if c.stopped.Swap(true) {
		return
	}
	if c.unwatch != nil {
		c.unwatch()
	}
	c.ccMu.Lock()
	cc := c.cc
	c.ccMu.Unlock()
	cc.Stop()
	c.l.consMu.Lock()
	delete(c.l.consumers, c)
	c.l.consMu.Unlock()
}

func (l *Log) stopConsumers() {
	l.consMu.Lock()
	cs := make([]*consumer, 0, len(l.consumers))
	for c := range l.consumers {
		cs = append(cs, c)
	}
	l.consMu.Unlock()
	for _, c := range cs {
		c.stop()
	}
	// A stop already running elsewhere (a canceled context's AfterFunc)
	// may not have unregistered its consumer yet; every one is stopped
	// now, so none stays registered.
	l.consMu.Lock()
	clear(l.consumers)
	l.consMu.Unlock()
}

// handle runs on the library's delivery goroutine. The mutex and the
// sequence check keep calls serial and in order even across the ordered
// consumer's internal resets.
func (c *consumer) handle(msg jetstream.Msg) {
	md, err := msg.Metadata()
	if err != nil {
		c.consumeErr(nil, fmt.Errorf("read message metadata: %w", err))
		return
	}
	seq := md.Sequence.Stream
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped.Load() || seq <= c.last {
		return
	}
	if c.last == 0 && c.from > 1 && seq > c.from {
		c.l.log.Warn("events expired before they were applied", "from_seq", c.from, "first_available_seq", seq)
	}
	c.last = seq
	c.delivered.Store(seq)
	c.l.deliver(&c.dec, msg.Subject(), msg.Data(), seq, md.NumPending, c.stopped.Load, c.fn)
}

// consumeErrInterval limits consume error logging per consumer.
const consumeErrInterval = time.Second

func (c *consumer) consumeErr(_ jetstream.ConsumeContext, err error) {
	c.l.setLastError(fmt.Errorf("consume events: %w", err))
	now := time.Now().UnixNano()
	last := c.errLog.Load()
	if now-last < int64(consumeErrInterval) || !c.errLog.CompareAndSwap(last, now) {
		return
	}
	c.l.log.Warn("event consumer error", "error", err)
}

// decode turns one event's JSON into an event at pos, or into a skip marker
// (empty Kind, position only) that is counted and logged once per kind of
// problem.
func (l *Log) decode(dec *domain.Decoder, data []byte, pos domain.Pos) domain.Event {
	ev, err := dec.Decode(data)
	if err != nil {
		l.undecodable.Add(1)
		l.skipOnce("malformed", pos, err)
		return domain.Event{Seq: pos.Seq, Index: pos.Index}
	}
	if err := ev.Valid(); err != nil {
		l.skipped.Add(1)
		l.skipOnce(fmt.Sprintf("%s/v%d", ev.Kind, ev.V), pos, err)
		return domain.Event{Seq: pos.Seq, Index: pos.Index}
	}
	ev.Seq, ev.Index = pos.Seq, pos.Index
	return ev
}

// maxSkipKinds bounds the set of problems already logged, so a stream of
// garbage kinds cannot grow it without limit.
const maxSkipKinds = 64

var errSkipTooMany = errors.New("more kinds of unusable events; no longer logging new ones")

type skipLog struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (l *Log) skipOnce(kind string, pos domain.Pos, err error) {
	l.skips.mu.Lock()
	defer l.skips.mu.Unlock()
	if l.skips.seen == nil {
		l.skips.seen = make(map[string]bool)
	}
	if l.skips.seen[kind] {
		return
	}
	if len(l.skips.seen) >= maxSkipKinds {
		if !l.skips.seen[""] {
			l.skips.seen[""] = true
			l.log.Warn("skipping event", "error", errSkipTooMany)
		}
		return
	}
	l.skips.seen[kind] = true
	l.log.Warn("skipping unusable events of this kind (logged once)", "kind", kind, "first_position", pos.String(), "error", err)
}

// LastSeq returns the last sequence the stream assigned: 0 before the
// first message, and unchanged when its messages aged out (Bounds says
// what is still stored). While the connection is down it fails at once
// rather than at ctx's deadline.
func (l *Log) LastSeq(ctx context.Context) (uint64, error) {
	if l.reconnecting() {
		return 0, fmt.Errorf("read %s state: %w", EventsStream, errUnreachable)
	}
	info, err := l.events.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("read %s state: %w", EventsStream, err)
	}
	return info.State.LastSeq, nil
}

// Bounds returns what the stream still stores: the sequences and store
// times of its first and last messages, all zero when it holds none.
func (l *Log) Bounds(ctx context.Context) (Bounds, error) {
	if l.reconnecting() {
		return Bounds{}, fmt.Errorf("read %s state: %w", EventsStream, errUnreachable)
	}
	info, err := l.events.Info(ctx)
	if err != nil {
		return Bounds{}, fmt.Errorf("read %s state: %w", EventsStream, err)
	}
	st := info.State
	if st.Msgs == 0 {
		return Bounds{}, nil
	}
	return Bounds{FirstSeq: st.FirstSeq, LastSeq: st.LastSeq, FirstStored: st.FirstTime, LastStored: st.LastTime}, nil
}

// Read delivers the stored events from sequence from to to (inclusive; 0:
// the last sequence when Read starts) and returns when it is done, when fn
// returns an error (which Read returns), or when ctx is done. Like
// Consume, skipped messages arrive as events with an empty Kind.
func (l *Log) Read(ctx context.Context, from, to uint64, fn func(ev domain.Event, pending uint64) error) error {
	info, err := l.events.Info(ctx)
	if err != nil {
		return fmt.Errorf("read %s state: %w", EventsStream, err)
	}
	st := info.State
	if to == 0 || to > st.LastSeq {
		to = st.LastSeq
	}
	if st.Msgs == 0 || from > to || to < st.FirstSeq {
		return nil
	}
	done := make(chan struct{})
	var ferr error
	var once sync.Once
	finish := func() { once.Do(func() { close(done) }) }
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop, err := l.Consume(rctx, from, func(ev domain.Event, pending uint64) {
		if ev.Seq > to {
			finish()
			return
		}
		select {
		case <-done:
			return
		default:
		}
		if err := fn(ev, pending); err != nil {
			ferr = err
			finish()
			return
		}
		// The last event of message to is not known as such (a batch
		// may follow it in the same message); the next message's first
		// event, or the end of the stream, ends the read.
		if pending == 0 {
			finish()
		}
	})
	if err != nil {
		return err
	}
	defer stop()
	select {
	case <-done:
		return ferr
	case <-ctx.Done():
		return fmt.Errorf("read events %d..%d: %w", from, to, ctx.Err())
	}
}
