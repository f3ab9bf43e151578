package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
)

// controlLog is what the engine needs from the log: a synchronous,
// de-duplicated publish of a decision.
type controlLog interface {
	PublishControl(ctx context.Context, ev domain.Event) (uint64, error)
}

// engine runs beside the projection writer: it turns live outcomes into
// decisions through the pure policy, publishes them off the writer
// goroutine, notices expired bans, and saves checkpoints.
type engine struct {
	log     controlLog
	live    *projections.Live
	policy  domain.BanPolicy
	logger  hclog.Logger
	bootSeq uint64 // outcomes at or below this sequence were decided before this process started
	// horizon, when set, is how old an outcome may be and still be decided
	// on: with several replicas, a decision published later than the log's
	// de-duplication window after its cause could ban twice, and a replica
	// that far behind leaves the decision to the replicas that are not.
	horizon time.Duration
	now     func() time.Time
	// lastFailLog is when a publish failure was last logged (run's
	// goroutine only).
	lastFailLog time.Time
	decisions   chan domain.Event
	dropped     atomic.Uint64
	failed      atomic.Uint64
	checkpoint  func(seq uint64, data []byte)
	// observe sees every applied event, and whether it is live (newer than
	// the log at start), for metrics and log lines.
	observe   func(ev domain.Event, live bool)
	every     uint64 // checkpoint every this many applied events
	sinceCkpt uint64
	wg        sync.WaitGroup
}

// afterApply is installed as projections.Live.AfterApply; it runs on the
// writer goroutine and must not block.
func (e *engine) afterApply(s *projections.State, ev domain.Event) {
	live := ev.Seq > e.bootSeq
	if e.observe != nil {
		e.observe(ev, live)
	}
	if ev.Kind == domain.KindOutcomeRecorded && live && e.fresh(ev) {
		for _, d := range domain.Decide(e.policy, ev, s.Facts(ev)) {
			select {
			case e.decisions <- d:
			default:
				// A dropped ban is not lost for good: the pair's counter
				// stays at or past the threshold, so its next failure with
				// that code decides the same ban again, under the same id
				// (one per failure streak). A dropped cooldown or bench
				// comes back only if a later outcome calls for one. Count
				// and say it.
				e.dropped.Add(1)
				e.logger.Warn("decision queue full; decision dropped", "kind", d.Kind, "id", d.ID)
			}
		}
	}
	if e.checkpoint != nil && e.every > 0 {
		e.sinceCkpt++
		if e.sinceCkpt >= e.every {
			e.sinceCkpt = 0
			if data, err := s.MarshalCheckpoint(); err == nil {
				e.checkpoint(ev.Seq, data)
			} else {
				e.logger.Error("checkpoint marshal failed", "error", err)
			}
		}
	}
}

// fresh reports whether an outcome is recent enough to decide on.
func (e *engine) fresh(ev domain.Event) bool {
	return e.horizon <= 0 || e.now().Sub(ev.At) <= e.horizon
}

// run publishes decisions and expiry events until ctx ends.
func (e *engine) run(ctx context.Context, expiryEvery time.Duration, now func() time.Time) {
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		tick := time.NewTicker(expiryEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case d := <-e.decisions:
				e.publish(ctx, d)
			case <-tick.C:
				for _, d := range e.live.Load().ExpiredBans(now()) {
					e.publish(ctx, d)
				}
			}
		}
	}()
}

func (e *engine) publish(ctx context.Context, d domain.Event) {
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := e.log.PublishControl(pctx, d); err != nil {
		n := e.failed.Add(1)
		// While the log is down the expiry ticker retries every second:
		// say it once per failLogEvery, with the running count.
		if now := e.now(); now.Sub(e.lastFailLog) >= failLogEvery {
			e.lastFailLog = now
			e.logger.Error("publishing a decision failed", "kind", d.Kind, "id", d.ID,
				"failed_total", n, "error", err)
		}
	}
}

// failLogEvery limits the engine's publish-failure log lines.
const failLogEvery = 10 * time.Second

func (e *engine) wait() { e.wg.Wait() }
