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

// decideRecovery queues the lift by recovery that a live success on a pair
// under an automatic ban calls for (projections.State.RecoveryLift). It
// goes out like a ban, guarded by its cause, under an id derived from the
// ban, so every replica deciding it stores one copy. A dropped lift comes
// back with the pair's next success.
func (e *Engine) decideRecovery(s *projections.State, ev domain.Event) {
	d, ok := s.RecoveryLift(ev)
	if !ok {
		return
	}
	e.enqueue(&decision{ev: d, cause: ev.Seq})
}

// DefaultProbeEvery is how often the prober looks for due recovery probes.
const DefaultProbeEvery = time.Second

// ProberConfig is what the prober needs, given once to NewProber.
type ProberConfig struct {
	// Log publishes the claims (PublishControl, de-duplicated by id).
	Log Log
	// Snapshot returns the current projection snapshot; due probes are
	// read from it. Required.
	Snapshot func() *projections.Snapshot
	// Clock makes the prober's ticker and stamps its claims. Required.
	Clock clockwork.Clock
	// Policy is this replica's fail2ban.recovery, which applies until a
	// policy.changed is on the log; from then on the snapshot's policy in
	// force does (projections.Snapshot.Policy). With ProbeAfter 0 no probe
	// is claimed.
	Policy domain.RecoveryPolicy
	// Replica names this process in its claims. Required.
	Replica string
	// Every is how often due probes are looked for; 0 is
	// DefaultProbeEvery.
	Every  time.Duration
	Logger hclog.Logger
}

// Prober claims due recovery probes through the log, off the request
// path: every tick it reads the snapshot's due probes
// (projections.Snapshot.DueProbes) and publishes a probe.claimed event for
// each, under the id of the ban and interval (domain.ProbeClaimID). Of the
// replicas claiming one interval the log stores one copy within its
// de-duplication window, and past it the fold keeps the first claim of an
// interval, so exactly one replica's claim counts cluster-wide; the proxy
// of that replica lets one request through when it reads the claim in its
// snapshot.
type Prober struct {
	cfg     ProberConfig
	claimed atomic.Uint64
	failed  atomic.Uint64
	// lastFailLog is when a failed claim was last logged (run goroutine).
	lastFailLog time.Time

	loop loop
}

// NewProber checks the configuration and builds a stopped prober.
func NewProber(c ProberConfig) (*Prober, error) {
	var errs []error
	if c.Log == nil {
		errs = append(errs, errors.New("decisions: prober Log is required"))
	}
	if c.Snapshot == nil {
		errs = append(errs, errors.New("decisions: prober Snapshot is required"))
	}
	if c.Clock == nil {
		errs = append(errs, errors.New("decisions: prober Clock is required"))
	}
	if c.Replica == "" {
		errs = append(errs, errors.New("decisions: prober Replica is required"))
	}
	if c.Every < 0 {
		errs = append(errs, errors.New("decisions: prober Every may not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if c.Every == 0 {
		c.Every = DefaultProbeEvery
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	return &Prober{cfg: c}, nil
}

// Start claims due probes every tick until ctx ends or Stop is called; the
// ticker exists when Start returns. It ticks with probes off too, since a
// policy.changed may turn them on. A second call does nothing.
func (p *Prober) Start(ctx context.Context) {
	p.loop.start(ctx, p.cfg.Clock, p.cfg.Every, func(ctx context.Context, tick <-chan time.Time) {
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick:
				p.claimDue(ctx)
			}
		}
	})
}

// Stop ends what Start started; Wait returns once it has ended.
func (p *Prober) Stop() { p.loop.stop() }

// Wait returns once the goroutine Start began has returned.
func (p *Prober) Wait() { p.loop.wait() }

// Claimed is how many claims this prober published (stored or found
// stored by another replica's identical id).
func (p *Prober) Claimed() uint64 { return p.claimed.Load() }

// Failed is how many claims failed to publish; the next tick tries again.
func (p *Prober) Failed() uint64 { return p.failed.Load() }

func (p *Prober) claimDue(ctx context.Context) {
	snap := p.cfg.Snapshot()
	pol := p.cfg.Policy
	if in := snap.Policy(); in != nil {
		pol = in.Ban.Recovery
	}
	for _, ev := range snap.DueProbes(p.cfg.Clock.Now(), pol, p.cfg.Replica) {
		pctx, cancel := context.WithTimeout(ctx, publishTimeout)
		_, err := p.cfg.Log.PublishControl(pctx, ev)
		cancel()
		if err != nil {
			n := p.failed.Add(1)
			if now := p.cfg.Clock.Now(); now.Sub(p.lastFailLog) >= FailLogEvery {
				p.lastFailLog = now
				p.cfg.Logger.Error("claiming a recovery probe failed", "id", ev.ID, "failed_total", n, "error", err)
			}
			continue
		}
		p.claimed.Add(1)
	}
}
