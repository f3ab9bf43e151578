// Package decisions runs beside the projection writer: it turns live
// outcomes into decisions through the pure policy (domain.Decide),
// publishes them to the log off the writer goroutine, records the expiry of
// bans in the log, and paces the projection checkpoints.
//
// The Engine is installed as projections.Live.AfterApply and sees every
// applied event on the writer goroutine, where it never blocks: decisions
// go into a bounded queue that one goroutine drains to the log. It is also
// Live.AfterPublish, handing the checkpoint of a published snapshot to the
// Checkpointer every CheckpointEvery events. Time comes from an injected
// clockwork.Clock, which also makes the expiry sweep's ticker, so the
// policy's timing is testable without waiting on the wall clock.
// It imports only domain and projections, and reaches the log through its
// own ports (Log, CheckpointStore), which the wiring fills with
// transport/eventlog's PublishControl and SaveCheckpoint. A decision's next
// step is the log: it comes back through the consumer and is folded by
// projections like any event, so replay only ever folds what was decided.
package decisions

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
)

const (
	// DefaultQueue bounds the decisions waiting to be published. The
	// writer never waits for the log: past this many, a decision is
	// dropped and counted (see Engine.AfterApply for why that is safe).
	DefaultQueue = 4096
	// DefaultSweepEvery is how often the engine looks for bans past their
	// until, to record their lifting in the log. Routing never waits for
	// it: a ban stops applying at its until by the reader's clock.
	DefaultSweepEvery = time.Second
	// DefaultCheckpointEvery is how many applied events pass between two
	// checkpoints offered to the saver. It bounds the events replayed at
	// start: at ~300k events/s, 50k events are under 0.2 s.
	DefaultCheckpointEvery = 50_000
	// FailLogEvery limits the publish-failure log lines. While the log is
	// down the expiry sweep retries every sweep, so a failure is said once
	// per FailLogEvery, with the running count.
	FailLogEvery = 10 * time.Second
	// publishTimeout bounds one publish of a decision.
	publishTimeout = 5 * time.Second
)

// Log is what the engine needs from the event log.
type Log interface {
	// PublishControl is a synchronous publish de-duplicated by the event's
	// ID, returning its log position (eventlog.Log.PublishControl); the
	// expiry sweep's ban.lifted events go through it.
	PublishControl(ctx context.Context, ev domain.Event) (uint64, error)
	// PublishDecision publishes a decision made on the outcome at log
	// sequence cause, unless the log already holds an event on the
	// decision's subject (the pair's bans or cooldowns, the model's
	// benches) stored after cause: that is the same decision, published
	// by another replica or before a restart, however long ago. stored
	// reports whether this call stored it; at most one publish per cause
	// and subject stores (eventlog.Log.PublishDecision).
	PublishDecision(ctx context.Context, ev domain.Event, cause uint64) (seq uint64, stored bool, err error)
}

// Config is everything the engine needs, given once to New.
type Config struct {
	// Log publishes the decisions and expiry events. Required.
	Log Log
	// Snapshot returns the current projection snapshot
	// (projections.Live.Load); the expiry sweep reads its bans. Required.
	Snapshot func() *projections.Snapshot
	// Clock is the engine's time: the failure log rate reads it and it
	// makes the expiry sweep's ticker. Required:
	// clockwork.NewRealClock() in production. The bounds on one publish
	// are wall-clock deadlines: they guard against a stuck network.
	Clock clockwork.Clock
	// Policy is this replica's ban policy (its file's). domain.Decide
	// applies it to live outcomes until a policy.changed is on the log;
	// from then on the policy in force at the outcome's position does
	// (projections.State.Policy), so every replica decides alike.
	Policy domain.BanPolicy
	// BootSeq is the log's last sequence when this process started.
	// Outcomes at or below it were decided before, so replaying them
	// decides nothing again: replay has no side effects.
	BootSeq uint64
	// Observe, when set, sees every applied event, what it changed in the
	// ban table, and whether it is live (newer than the log at start), for
	// metrics and log lines. It runs on the writer goroutine before the
	// snapshot holding the event is published, and must not block.
	Observe func(ev domain.Event, ch projections.Change, live bool)
	// Checkpoints, when set, is offered the checkpoint of the snapshot
	// published once CheckpointEvery events have been applied since the
	// last one (AfterPublish).
	Checkpoints *Checkpointer
	// Logger receives the engine's warnings and errors; nil discards them.
	Logger hclog.Logger

	// Queue, SweepEvery and CheckpointEvery are zero for DefaultQueue,
	// DefaultSweepEvery and DefaultCheckpointEvery.
	Queue           int
	SweepEvery      time.Duration
	CheckpointEvery uint64
}

// Engine turns live outcomes into published decisions. AfterApply and
// AfterPublish belong to the writer goroutine; Start, Stop, Wait and the
// counters may be called from any goroutine. Its life: New, install
// AfterApply and AfterPublish, Start once the
// projections have caught up (decisions made while catching up wait in the
// queue), then Stop (or the end of Start's context) and Wait.
type Engine struct {
	log      Log
	snapshot func() *projections.Snapshot
	clock    clockwork.Clock
	// own is this replica's own policy (Config.Policy, SetPolicy).
	own        atomic.Pointer[ownPolicy]
	bootSeq    uint64
	observe    func(ev domain.Event, ch projections.Change, live bool)
	ckpt       *Checkpointer
	logger     hclog.Logger
	sweepEvery time.Duration
	ckptEvery  uint64

	// decisions holds pointers: a channel's buffer is allocated whole, so
	// whole events would keep the default queue's 4096 slots resident.
	decisions chan *decision
	dropped   atomic.Uint64
	// pending counts decisions enqueued and not yet through publishDecision.
	pending atomic.Int64
	failed  atomic.Uint64
	decided atomic.Uint64

	// sinceCkpt counts the events applied since the last checkpoint
	// offered (writer goroutine only).
	sinceCkpt uint64
	// lastFailLog is when a publish failure was last logged (the run
	// goroutine only).
	lastFailLog time.Time

	loop loop
}

// New checks the configuration and builds a stopped engine.
func New(c Config) (*Engine, error) {
	var errs []error
	if c.Log == nil {
		errs = append(errs, errors.New("decisions: Log is required"))
	}
	if c.Snapshot == nil {
		errs = append(errs, errors.New("decisions: Snapshot is required"))
	}
	if c.Clock == nil {
		errs = append(errs, errors.New("decisions: Clock is required"))
	}
	if c.Queue < 0 || c.SweepEvery < 0 {
		errs = append(errs, errors.New("decisions: Queue and SweepEvery may not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	e := &Engine{
		log:        c.Log,
		snapshot:   c.Snapshot,
		clock:      c.Clock,
		bootSeq:    c.BootSeq,
		observe:    c.Observe,
		ckpt:       c.Checkpoints,
		logger:     c.Logger,
		sweepEvery: c.SweepEvery,
		ckptEvery:  c.CheckpointEvery,
	}
	e.own.Store(newOwnPolicy(c.Policy))
	if e.logger == nil {
		e.logger = hclog.NewNullLogger()
	}
	if e.sweepEvery == 0 {
		e.sweepEvery = DefaultSweepEvery
	}
	if e.ckptEvery == 0 {
		e.ckptEvery = DefaultCheckpointEvery
	}
	queue := c.Queue
	if queue == 0 {
		queue = DefaultQueue
	}
	e.decisions = make(chan *decision, queue)
	return e, nil
}

// decision is a queued decision and the log sequence of the outcome it was
// made on.
type decision struct {
	ev    domain.Event
	cause uint64
}

// AfterApply is installed as projections.Live.AfterApply: it runs on the
// writer goroutine right after ev is folded into s, and never blocks.
//
// Every live outcome is decided on, however old: one that reached the log
// late (held by the proxy's publisher through an outage, or folded by a
// replica far behind) decides what it calls for, with its own time. The
// log's PublishDecision keeps that to one stored copy across replicas, also
// past the log's de-duplication window.
func (e *Engine) AfterApply(s *projections.State, ev domain.Event, ch projections.Change) {
	live := ev.Seq > e.bootSeq
	if e.observe != nil {
		e.observe(ev, ch, live)
	}
	if ev.Kind == domain.KindOutcomeRecorded && live {
		for _, d := range domain.Decide(e.policyAt(s), ev, s.Facts(ev)) {
			// A dropped ban is not lost for good: the pair's counter stays
			// at or past the threshold, so its next failure with that code
			// decides the same ban again, under the same id (one per
			// failure streak). A dropped cooldown or bench comes back only
			// if a later outcome calls for one.
			e.enqueue(&decision{ev: d, cause: ev.Seq})
		}
		e.decideRecovery(s, ev)
	}
	if ev.Kind == domain.KindPolicyChanged && live {
		e.warnPolicy(ev)
	}
	e.sinceCkpt++
}

// AfterPublish is installed as projections.Live.AfterPublish: on the
// writer goroutine, right after a swap, once CheckpointEvery events have
// been applied since the last checkpoint, it hands the checkpointer the
// checkpoint of the snapshot just published. The snapshot is immutable,
// so the writer copies only the last uses the snapshot holds out of date
// (projections.State.CheckpointOf); the checkpointer marshals it on its
// own goroutine.
func (e *Engine) AfterPublish(s *projections.State, snap *projections.Snapshot) {
	if e.ckpt == nil || e.sinceCkpt < e.ckptEvery {
		return
	}
	e.sinceCkpt = 0
	cp, err := s.CheckpointOf(snap)
	if err != nil {
		e.logger.Error("checkpoint skipped", "error", err)
		return
	}
	e.ckpt.Offer(cp)
}

// Start publishes queued decisions, and every sweep the expiry of bans the
// snapshot holds past their until, until ctx ends or Stop is called. The
// sweep's ticker exists when Start returns. A second Start does nothing.
func (e *Engine) Start(ctx context.Context) {
	e.loop.start(ctx, e.clock, e.sweepEvery, e.run)
}

func (e *Engine) run(ctx context.Context, tick <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case d := <-e.decisions:
			e.publishDecision(ctx, d)
			e.pending.Add(-1)
		case <-tick:
			for _, d := range e.snapshot().ExpiredBans(e.clock.Now()) {
				e.publishExpiry(ctx, d)
			}
		}
	}
}

// Stop ends what Start started; an in-flight publish is abandoned. Wait
// returns once it has ended. Decisions still queued are not published.
func (e *Engine) Stop() { e.loop.stop() }

// Wait returns once the goroutine Start began has returned (at once when
// the engine was never started).
func (e *Engine) Wait() { e.loop.wait() }

// enqueue hands d to the publishing goroutine without waiting; a full
// queue drops it, counted and logged.
func (e *Engine) enqueue(d *decision) {
	e.pending.Add(1)
	select {
	case e.decisions <- d:
	default:
		e.pending.Add(-1)
		e.dropped.Add(1)
		e.logger.Warn("decision queue full; decision dropped", "kind", d.ev.Kind, "id", d.ev.ID)
	}
}

// Queued is how many decisions are not yet through the log: waiting in the
// queue or being published.
func (e *Engine) Queued() int { return int(e.pending.Load()) }

// Dropped is how many decisions a full queue dropped.
func (e *Engine) Dropped() uint64 { return e.dropped.Load() }

// Failed is how many publishes of a decision or expiry failed.
func (e *Engine) Failed() uint64 { return e.failed.Load() }

// AlreadyDecided is how many decisions this engine did not store because
// the log held them already (published by another replica, or before).
func (e *Engine) AlreadyDecided() uint64 { return e.decided.Load() }

func (e *Engine) publishDecision(ctx context.Context, d *decision) {
	pctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	seq, stored, err := e.log.PublishDecision(pctx, d.ev, d.cause)
	switch {
	case err != nil:
		e.publishFailed(d.ev, err)
	case !stored:
		e.decided.Add(1)
		e.logger.Debug("decision already in the log", "kind", d.ev.Kind, "id", d.ev.ID,
			"cause_seq", d.cause, "seq", seq)
	}
}

func (e *Engine) publishExpiry(ctx context.Context, d domain.Event) {
	pctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	if _, err := e.log.PublishControl(pctx, d); err != nil {
		e.publishFailed(d, err)
	}
}

// publishFailed counts a failed publish and logs it at most once per
// FailLogEvery.
func (e *Engine) publishFailed(d domain.Event, err error) {
	n := e.failed.Add(1)
	if now := e.clock.Now(); now.Sub(e.lastFailLog) >= FailLogEvery {
		e.lastFailLog = now
		e.logger.Error("publishing a decision failed", "kind", d.Kind, "id", d.ID,
			"failed_total", n, "error", err)
	}
}
