package eventlog

import (
	"context"
	"errors"
	"sync"

	"github.com/airouter/airouter/domain"
	"github.com/hashicorp/go-hclog"
)

// Log is the event log a router writes and folds: a connection to NATS
// with both streams set up (conn.go), the publisher that writes events
// (publisher.go) and the consumers that read them (consume.go). It is safe
// for concurrent use.
type Log struct {
	opts Options
	log  hclog.Logger
	errs *lastError
	conn *conn
	pub  *publisher
	cons *consumers
	tick *ticker // losses line and stalled-consumer check

	closeOnce sync.Once
	closeErr  error
}

// Open starts (or connects to) NATS, makes sure both streams exist and
// starts the publisher. On error nothing is left running and the store
// lock is released.
func Open(ctx context.Context, opts Options) (*Log, error) {
	l, err := openIdle(ctx, opts)
	if err != nil {
		return nil, err
	}
	l.pub.start()
	return l, nil
}

// openIdle is Open without starting the publisher goroutine: Publish
// queues, nothing sends until pub.start.
func openIdle(ctx context.Context, opts Options) (*Log, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	l := &Log{opts: o, log: o.Logger.Named("eventlog"), errs: new(lastError)}
	l.conn = newConn(l.log, l.errs, o.NatsURL)
	l.pub = newPublisher(l.conn, l.log, l.errs, o.QueueSize, o.Clock)
	if err := l.conn.openLog(ctx, o, l.pub.jetStreamOpts()...); err != nil {
		return nil, errors.Join(err, l.conn.teardown())
	}
	l.cons = newConsumers(l.conn, l.log, l.errs, l.pub.writable)
	l.conn.onRedial = l.cons.replaceAll
	l.tick = startTicker(checkInterval, func() {
		l.pub.reporter.tick()
		l.conn.mark.write()
		l.conn.checkStore(&l.pub.store, l.errs, l.cons.replaceAll)
		l.conn.checkProcess(&l.pub.store, l.errs, l.cons.replaceAll)
		l.cons.watch()
	})
	return l, nil
}

// ClientURL is the embedded server's NATS URL when Options.Listen is set,
// else "".
func (l *Log) ClientURL() string {
	switch {
	case l.opts.Listen == "":
		return ""
	case l.conn.srv != nil:
		return l.conn.srv.ClientURL()
	case l.conn.proc != nil:
		return l.conn.proc.url
	}
	return ""
}

// Publish queues an event for asynchronous publishing and never blocks. It
// returns false, and counts the event, when the queue is full, the log is
// closing, or the event is invalid. The event is encoded on the caller's
// goroutine, so the single publisher goroutine only does I/O. Delivery is
// at-most-once: use PublishControl for events that must not be lost.
func (l *Log) Publish(ev domain.Event) bool { return l.pub.publish(ev) }

// PublishPrompt is Publish for a successful outcome that may change
// routing (a success on a pair under a ban or a cooldown may lift it): its
// round is not held past 20 ms.
func (l *Log) PublishPrompt(ev domain.Event) bool { return l.pub.publishPrompt(ev) }

// HoldQuietRounds sets whether the publisher may hold a round holding
// only successful outcomes up to 500 ms instead of 20 (publisher.linger):
// fewer, larger messages, for a router that is the log's only replica.
// Off when Open returns; a router sharing the log keeps it off, since its
// peers count its requests from those outcomes. Turning it off also ends
// a round being held.
func (l *Log) HoldQuietRounds(on bool) {
	l.pub.holdQuiet.Store(on)
	if !on {
		wake(l.pub.queue.hurry)
	}
}

// PublishControl publishes a ban, unban, cooldown, bench or settings event
// synchronously with Nats-Msg-Id set to ev.ID, retrying transient failures
// with backoff within ctx; while the connection is down it gives up after
// the retries' backoff (under a second). It returns the event's stream
// sequence; when the ID was already stored within DuplicateWindow it
// returns the original sequence and publishes nothing.
func (l *Log) PublishControl(ctx context.Context, ev domain.Event) (uint64, error) {
	return l.pub.publishControl(ctx, ev)
}

// PublishDecision publishes a decision the way PublishControl does, unless
// the stream already holds an event on the decision's subject (its pair's
// bans, cooldowns, or its model's benches) stored after cause, the stream
// sequence of the outcome the decision was made on. Every replica folds
// the log in one order and decides the same thing at the same position, so
// such an event is that decision published before (by another replica, or
// an admin acting on the pair since), however long ago: the guard holds
// beyond DuplicateWindow. The publish itself expects the subject's last
// event to be the one read (Nats-Expected-Last-Subject-Sequence), so of two
// replicas publishing at once one stores it and the other reads it again
// and stops. It returns the sequence of the event stored, or of the one
// found, and whether this call stored it.
func (l *Log) PublishDecision(ctx context.Context, ev domain.Event, cause uint64) (seq uint64, stored bool, err error) {
	return l.pub.publishDecision(ctx, ev, cause)
}

// Flush waits until every event queued before the call has been
// acknowledged, has failed, or was dropped by Close. It is for tools and
// tests, never the request path: while the log is unreachable it waits for
// the log to come back (or ctx). Its marker is queued even when the queue
// is full, and stays queued until the publisher reaches it, whether or not
// ctx ends first.
func (l *Log) Flush(ctx context.Context) error { return l.pub.flush(ctx) }

// Consume delivers every event from stream sequence fromSeq on (0 or 1:
// from the start) and then follows new ones, until stop is called, ctx is
// done or the log closes. When fromSeq lies before the oldest stored event,
// delivery starts at the oldest and a warning names the gap.
func (l *Log) Consume(ctx context.Context, fromSeq uint64, fn EventFunc) (stop func(), err error) {
	return l.cons.consumeFrom(ctx, fromSeq, l.conn.srv != nil, fn)
}

// Follow delivers only events published from now on whose subjects match
// subjects (nil: all events), e.g. BanSubjects(), until stop is called, ctx
// is done or the log closes.
func (l *Log) Follow(ctx context.Context, subjects []string, fn EventFunc) (stop func(), err error) {
	return l.cons.follow(ctx, subjects, fn)
}

// Read delivers the stored events from sequence from to to (inclusive; 0:
// the last sequence when Read starts) and returns when it is done, when fn
// returns an error (which Read returns), or when ctx is done. Like
// Consume, skipped messages arrive as events with an empty Kind.
func (l *Log) Read(ctx context.Context, from, to uint64, fn func(ev domain.Event, pending uint64) error) error {
	return l.cons.read(ctx, from, to, fn)
}

// LastSeq returns the last sequence the stream assigned: 0 before the
// first message, and unchanged when its messages aged out (Bounds says
// what is still stored). While the connection is down it fails at once
// rather than at ctx's deadline.
func (l *Log) LastSeq(ctx context.Context) (uint64, error) { return l.conn.lastSeq(ctx) }

// Bounds returns what the stream still stores: the sequences and store
// times of its first and last messages, all zero when it holds none.
func (l *Log) Bounds(ctx context.Context) (Bounds, error) { return l.conn.bounds(ctx) }

// SaveCheckpoint stores projection state taken after applying events up to
// seq. Only the latest two are kept, with no age limit, so a checkpoint
// carries state (permanent bans) past the events stream's retention. data
// must fit in one NATS message (8 MiB embedded; the cluster's max_payload
// otherwise).
func (l *Log) SaveCheckpoint(ctx context.Context, seq uint64, data []byte) error {
	return l.conn.saveCheckpoint(ctx, seq, data)
}

// LoadCheckpoint returns the latest checkpoint; ok is false when there is
// none.
func (l *Log) LoadCheckpoint(ctx context.Context) (seq uint64, data []byte, ok bool, err error) {
	return l.conn.loadCheckpoint(ctx)
}

// Stats returns a snapshot of the counters.
func (l *Log) Stats() Stats {
	s := Stats{Connected: l.conn.connected(), LastError: l.errs.String()}
	l.pub.addStats(&s)
	l.cons.addStats(&s)
	if p := l.conn.proc; p != nil {
		s.ServerProcess, s.ServerPID, s.ServerRestarts = true, int(p.pid.Load()), p.restarts.Load()
	}
	return s
}

// Close flushes and stops everything: stop accepting events, drain the
// queue, wait for outstanding acks (until ctx is done, then give up on
// them), stop the consumers and the periodic checks, drain the connection,
// shut the embedded server down and release the store lock. Writing ends
// first, while the connection can still carry what is queued; the
// consumers stop before the connection drains, so no callback runs on a
// closing connection; the server goes last because the connection drains
// into it. Events still queued when ctx ends are counted as dropped.
// Calling Close again returns the first result.
func (l *Log) Close(ctx context.Context) error {
	l.closeOnce.Do(func() { l.closeErr = l.close(ctx) })
	return l.closeErr
}

func (l *Log) close(ctx context.Context) error {
	l.cons.close()
	l.pub.stop(ctx)
	l.cons.stopAll()
	l.tick.stop()
	l.cons.restarts.Wait() // no check runs now, so none starts
	l.pub.reporter.tick()
	err := l.conn.close(ctx)
	s := l.Stats()
	l.log.Info("event log closed", "published", s.Published, "dropped", s.Dropped, "failed", s.Failed)
	return err
}
