package eventlog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/eventjson"
	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go/jetstream"
)

// pullMaxBytes is the ordered consumer's read-ahead, in bytes. A read-ahead
// counted in messages large enough for single-event messages would buffer
// as many batch messages of up to 64 KiB, past the client's pending limits:
// the subscription then drops messages and the ordered consumer resets,
// over and over. Counted in bytes it stays within them whatever the
// messages carry, and 16 MiB keeps a replay from waiting on the server.
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

// consumers is a log's read side: the running ordered consumers of the
// events stream, their replacement when they stall (consume_watch.go), the
// decoding of what they deliver (decode.go) and its counters. Log and
// Reader each have one.
type consumers struct {
	conn *conn
	log  hclog.Logger
	errs *lastError
	// streamUp reports whether the stream answers now; a stalled consumer
	// is replaced only then.
	streamUp func() bool

	// pause runs between two runs of a batch the fold consumer gets at the
	// stream's head (deliver, foldsAtHead): pauseForRequests, or a test's
	// count. now is the real clock it compares a message's store time with.
	pause func()
	now   func() time.Time

	closing  atomic.Bool // Consume and Follow refuse, nothing is replaced
	mu       sync.Mutex
	running  map[*consumer]struct{}
	restarts sync.WaitGroup // replacements under way

	undecodable atomic.Uint64
	skipped     atomic.Uint64
	skips       skipLog
	// tailHole is the missing tail {last stored, last assigned} Log.Damage
	// found, or nil.
	tailHole atomic.Pointer[[2]uint64]
	// moved is the first sequence Log.MovePast left the stream at, 0
	// without a move: a consumer asked to start below it starts there,
	// since nothing below it is stored or will be.
	moved atomic.Uint64
}

func newConsumers(c *conn, log hclog.Logger, errs *lastError, streamUp func() bool) *consumers {
	return &consumers{conn: c, log: log, errs: errs, streamUp: streamUp, pause: pauseForRequests,
		now: time.Now, running: make(map[*consumer]struct{})}
}

// consumer is one running ordered consumer.
type consumer struct {
	set  *consumers
	fn   EventFunc
	from uint64 // requested start sequence, for the gap warning
	// fold marks the router's fold when the embedded server runs in the
	// router's process (Log.Consume without Options.Process): the one
	// consumer that pauses between runs of a batch at the head.
	fold    bool
	mu      sync.Mutex
	last    uint64 // last delivered stream sequence
	stopped atomic.Bool
	unwatch func() bool
	errLog  atomic.Int64 // unix nanos of the last logged consume error
	dec     eventjson.Decoder

	// The running consumption, replaced when it stalls (consume_watch.go),
	// and the ordered consumer it reads, deleted once stopped (release.go).
	ccMu sync.Mutex
	cc   jetstream.ConsumeContext
	oc   jetstream.Consumer
	stall
}

// consumeFrom delivers every event from fromSeq on, then follows
// (Log.Consume; fold as for consumer.fold).
func (cs *consumers) consumeFrom(ctx context.Context, fromSeq uint64, fold bool, fn EventFunc) (stop func(), err error) {
	fromSeq = max(fromSeq, cs.moved.Load())
	cfg := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}
	if fromSeq > 1 {
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = fromSeq
	}
	return cs.consume(ctx, cfg, fromSeq, fold, fn)
}

// follow delivers the events published from now on (Log.Follow).
func (cs *consumers) follow(ctx context.Context, subjects []string, fn EventFunc) (stop func(), err error) {
	cfg := jetstream.OrderedConsumerConfig{
		DeliverPolicy:  jetstream.DeliverNewPolicy,
		FilterSubjects: subjects,
	}
	return cs.consume(ctx, cfg, 0, false, fn)
}

func (cs *consumers) consume(ctx context.Context, cfg jetstream.OrderedConsumerConfig, from uint64, fold bool, fn EventFunc) (func(), error) {
	if cs.closing.Load() {
		return nil, errors.New("consume events: the event log is closed")
	}
	oc, err := cs.conn.cur().js.OrderedConsumer(ctx, EventsStream, cfg)
	if err != nil {
		return nil, fmt.Errorf("create ordered consumer on %s: %w", EventsStream, err)
	}
	c := &consumer{set: cs, fn: fn, from: from, fold: fold, stall: stall{cfg: cfg}}
	c.ccMu.Lock()
	cc, err := oc.Consume(c.handle, c.consumeOpts()...)
	if err != nil {
		c.ccMu.Unlock()
		return nil, fmt.Errorf("consume %s: %w", EventsStream, err)
	}
	c.cc, c.oc = cc, oc
	c.ccMu.Unlock()
	cs.mu.Lock()
	cs.running[c] = struct{}{}
	cs.mu.Unlock()
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
	cc, oc := c.cc, c.oc
	c.ccMu.Unlock()
	cc.Stop()
	c.set.conn.release(oc)
	c.set.mu.Lock()
	delete(c.set.running, c)
	c.set.mu.Unlock()
}

// stopAll stops every running consumer; with closing set, none starts
// after it.
func (cs *consumers) stopAll() {
	cs.mu.Lock()
	run := make([]*consumer, 0, len(cs.running))
	for c := range cs.running {
		run = append(run, c)
	}
	cs.mu.Unlock()
	for _, c := range run {
		c.stop()
	}
	// A stop already running elsewhere (a canceled context's AfterFunc)
	// may not have unregistered its consumer yet; every one is stopped
	// now, so none stays registered.
	cs.mu.Lock()
	clear(cs.running)
	cs.mu.Unlock()
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
		c.set.log.Warn("events expired before they were applied", "from_seq", c.from, "first_available_seq", seq)
	}
	c.last = seq
	c.delivered.Store(seq)
	atHead := c.fold && foldsAtHead(md.NumPending, md.Timestamp, c.set.now())
	c.set.deliver(&c.dec, msg.Subject(), msg.Data(), seq, md.NumPending, atHead, c.stopped.Load, c.fn)
}

// consumeErrInterval limits consume error logging per consumer.
const consumeErrInterval = time.Second

func (c *consumer) consumeErr(_ jetstream.ConsumeContext, err error) {
	c.set.errs.set(fmt.Errorf("consume events: %w", err))
	now := time.Now().UnixNano()
	last := c.errLog.Load()
	if now-last < int64(consumeErrInterval) || !c.errLog.CompareAndSwap(last, now) {
		return
	}
	c.set.log.Warn("event consumer error", "error", err)
}

// addStats fills the consumers' part of s.
func (cs *consumers) addStats(s *Stats) {
	s.Undecodable = cs.undecodable.Load()
	s.Skipped = cs.skipped.Load()
}
