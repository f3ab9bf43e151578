package projections

import (
	"time"

	"github.com/airouter/airouter/domain"
)

// Recovery probes in the fold: a pair's latest probe claim for its current
// ban, which interval comes next and when it is due, and the lift a
// success on a pair under an automatic ban calls for. The schedule is a
// function of the ban's start and the claims folded, so every replica and
// every replay agrees on it.

// probeRec is the latest claim of a pair's current ban, with the time it
// was claimed (the event's). Replaced, never mutated: snapshots share it.
type probeRec struct {
	claim domain.ProbeClaim
	at    time.Time
}

// ProbeView is a pair's open probe claim as a view shows it.
type ProbeView struct {
	domain.ProbeClaim
	ClaimedAt time.Time `json:"claimed_at"`
}

// applyProbe folds a claim. It is kept only for the pair's current
// automatic ban, still active at the claim's time, and only as that ban's
// next interval: of two claims of one interval the first folded wins, so
// every replica sees the same claimer. Any other claim changes nothing.
func (s *State) applyProbe(pc domain.ProbeClaim, at time.Time) bool {
	if pc.Credential == "" || pc.Model == "" || pc.BanID == "" || pc.Interval < 0 {
		return false
	}
	if pc.Model == domain.AllModels {
		return s.applyCredProbe(pc, at)
	}
	c := s.creds[pc.Credential]
	if c == nil {
		return true
	}
	p := c.pairs[pc.Model]
	if p == nil || !probed(p.ban) || p.ban.id != pc.BanID || !p.ban.activeAt(nanos(at)) || pc.Interval != claimInterval(openProbe(p)) {
		return true
	}
	p.probe = &probeRec{claim: pc, at: at.UTC()}
	s.claims++
	s.touchPair(p)
	return true
}

// ClaimsFolded counts the probe claims the fold kept up to the snapshot
// (since the process began folding): a pick that did not look at every
// candidate's claims (the fallback group, while a primary serves) looks
// again only when it changed.
func (s *Snapshot) ClaimsFolded() uint64 { return s.claims }

// probed reports whether a ban gets recovery probes: an automatic one.
func probed(b *banRec) bool { return b != nil && b.ban.Origin != domain.OriginAdmin }

// openProbe is the pair's claim for its current ban, nil when none.
func openProbe(p *pairRec) *probeRec {
	if p.probe == nil || p.ban == nil || p.probe.claim.BanID != p.ban.id {
		return nil
	}
	return p.probe
}

// claimInterval is the interval a probed hold (a pair's automatic ban, a
// credential's auth cooldown) whose open claim is r (nil when none) claims
// next.
func claimInterval(r *probeRec) int {
	if r != nil {
		return r.claim.Interval + 1
	}
	return 0
}

// claimDue is when the next probe of a probed hold that began at since,
// whose open claim is r, is due: ProbeAfter after the hold began for the
// first, then each gap (doubling, up to ProbeMax) after the previous claim.
func claimDue(r *probeRec, since time.Time, pol domain.RecoveryPolicy) time.Time {
	if r != nil {
		return r.at.Add(pol.Gap(claimInterval(r)))
	}
	return since.Add(pol.Gap(0))
}

// DueProbes returns a probe.claimed event, claimed by replica at now, for
// every automatic pair ban whose next probe is due at now: the ban is
// active, neither the credential's wildcard ban, a cooldown nor a bench
// holds the pair too (a Retry-After is the upstream's word and is kept),
// and the policy is on. Ordered by credential then model. Each id is
// domain.ProbeClaimID, so every replica claiming the same interval
// publishes the same id. It reads the holds whose next probe can be due
// (probeindex.go): a tick finding none costs a few tree paths, one finding
// k about k paths and lookups, whatever the pool.
func (s *Snapshot) DueProbes(now time.Time, pol domain.RecoveryPolicy, replica string) []domain.Event {
	out, _ := s.dueProbes(now, pol, replica)
	return out
}

// DueProbe is DueProbes for the one pair k, read from the writer's state:
// the claim of its automatic ban due at now, if one is. A what-if run
// uses it to probe on the proposed policy's schedule.
func (s *State) DueProbe(k domain.Key, now time.Time, pol domain.RecoveryPolicy, replica string) (domain.Event, bool) {
	c := s.creds[k.Credential]
	if c == nil || !pol.On() {
		return domain.Event{}, false
	}
	p := c.pairs[k.Model]
	if p == nil {
		return domain.Event{}, false
	}
	return duePairProbe(c, p, s.models[p.model], now, pol, replica)
}

// duePairProbe is the claim of the pair's automatic ban due at now: the
// ban is active, neither the credential's wildcard ban, a cooldown nor a
// bench holds the pair too, and the next probe is due. m is the pair's
// model, nil when it has no record.
func duePairProbe(c *credRec, p *pairRec, m *modelRec, now time.Time, pol domain.RecoveryPolicy, replica string) (domain.Event, bool) {
	t := nanos(now)
	if c.wild.activeAt(t) || !probed(p.ban) || !p.ban.activeAt(t) || (p.cooldown != nil && p.cooldown.until > t) {
		return domain.Event{}, false
	}
	if m != nil && m.bench != nil && m.bench.until > t {
		return domain.Event{}, false
	}
	if now.Before(claimDue(openProbe(p), p.ban.ban.Since, pol)) {
		return domain.Event{}, false
	}
	n := claimInterval(openProbe(p))
	return domain.Event{
		V: domain.SchemaVersion, Kind: domain.KindProbeClaimed,
		ID: domain.ProbeClaimID(p.ban.id, n), At: now.UTC(),
		Probe: &domain.ProbeClaim{Credential: c.name, Model: p.model, BanID: p.ban.id, Interval: n, Replica: replica},
	}, true
}

// RecoveryLift returns the ban.lifted (by recovery) event a successful
// outcome calls for when it reached a pair whose own automatic ban was
// active at the outcome's time (a recovery probe, or a panic-routed
// request): the success is the evidence that the pair is healthy again.
// Its id is domain.RecoveryID of the ban, so every replica deciding it
// publishes the same one. Without such a ban, a success on a credential
// whose auth cooldown has an open probe claim calls for the cooldown's
// cooldown.lifted instead (authprobe.go). Call it right after the outcome
// was folded.
func (s *State) RecoveryLift(ev domain.Event) (domain.Event, bool) {
	if ev.Kind != domain.KindOutcomeRecorded || ev.Outcome == nil || !ev.Outcome.Success() {
		return domain.Event{}, false
	}
	o := ev.Outcome
	c := s.creds[o.Credential]
	if c == nil {
		return domain.Event{}, false
	}
	p := c.pairs[o.Model]
	if p == nil || !probed(p.ban) || p.ban.id == "" || !p.ban.activeAt(nanos(ev.At)) {
		return s.cooldownLift(ev)
	}
	return domain.Event{
		V: domain.SchemaVersion, Kind: domain.KindBanLifted,
		ID: domain.RecoveryID(p.ban.id), At: ev.At.UTC(),
		Unban: &domain.Unban{Credential: o.Credential, Model: o.Model, By: domain.LiftedByRecovery, BanID: p.ban.id},
	}, true
}

// probeView is the pair's open claim for a view, nil when none.
func probeView(p *pairRec) *ProbeView {
	r := openProbe(p)
	if r == nil {
		return nil
	}
	return &ProbeView{ProbeClaim: r.claim, ClaimedAt: r.at}
}

// checkpointProbe is a pair's claim in a checkpoint.
type checkpointProbe struct {
	Claim domain.ProbeClaim `json:"claim"`
	At    time.Time         `json:"at"`
}

func checkpointProbeOf(p *pairRec) *checkpointProbe {
	r := openProbe(p)
	if r == nil {
		return nil
	}
	return &checkpointProbe{Claim: r.claim, At: r.at}
}

func (cp *checkpointProbe) rec() *probeRec {
	if cp == nil {
		return nil
	}
	return &probeRec{claim: cp.Claim, at: cp.At.UTC()}
}
