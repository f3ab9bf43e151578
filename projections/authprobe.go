package projections

import (
	"time"

	"github.com/airouter/airouter/domain"
)

// Recovery probes of auth cooldowns in the fold: a credential cooled as a
// whole by a 401 keeps its latest probe claim beside the cooldown (the
// claim's ban_id is the cooldown's id, its model "*"), is due for a probe
// on the schedule an automatic ban has (from the cooldown's start), and a
// success on it while a claim is open lifts the cooldown
// (cooldown.lifted). A 401 on the probe changes nothing: the cooldown
// holds to its end.

// probedCooldown reports whether the credential's cooldown gets recovery
// probes: an auth cooldown active at t (Unix nanoseconds).
func probedCooldown(c *credRec, t int64) bool {
	return c.cooldown != nil && c.cooldown.cd.Auth() && c.cooldown.until > t
}

// openCredProbe is the credential's claim for its current auth cooldown,
// nil when none.
func openCredProbe(c *credRec) *probeRec {
	if c.probe == nil || c.cooldown == nil || c.probe.claim.BanID != c.cooldown.cd.ID() {
		return nil
	}
	return c.probe
}

// applyCredProbe folds a claim of a credential's auth cooldown: kept only
// for the current cooldown, active at the claim's time, and only as its
// next interval (the first claim of an interval folded wins).
func (s *State) applyCredProbe(pc domain.ProbeClaim, at time.Time) bool {
	c := s.creds[pc.Credential]
	if c == nil || !probedCooldown(c, nanos(at)) || c.cooldown.cd.ID() != pc.BanID || pc.Interval != claimInterval(openCredProbe(c)) {
		return true
	}
	c.probe = &probeRec{claim: pc, at: at.UTC()}
	s.claims++
	s.touchCred(c)
	return true
}

// dueCredProbe is the claim of the credential's auth cooldown due at now,
// when one is: the cooldown is active and no ban of the whole credential
// holds it too.
func dueCredProbe(c *credRec, now time.Time, pol domain.RecoveryPolicy, replica string) (domain.Event, bool) {
	t := nanos(now)
	if !probedCooldown(c, t) || c.wild.activeAt(t) || c.cooldown.cd.Since.IsZero() || now.Before(claimDue(openCredProbe(c), c.cooldown.cd.Since, pol)) {
		return domain.Event{}, false
	}
	id := c.cooldown.cd.ID()
	n := claimInterval(openCredProbe(c))
	return domain.Event{
		V: domain.SchemaVersion, Kind: domain.KindProbeClaimed,
		ID: domain.ProbeClaimID(id, n), At: now.UTC(),
		Probe: &domain.ProbeClaim{Credential: c.name, Model: domain.AllModels, BanID: id, Interval: n, Replica: replica},
	}, true
}

// cooldownLift is the cooldown.lifted (by recovery) event a successful
// outcome calls for when its credential's auth cooldown, active at the
// outcome's time, has an open probe claim made at or before it: the probe
// re-validated the credential.
func (s *State) cooldownLift(ev domain.Event) (domain.Event, bool) {
	c := s.creds[ev.Outcome.Credential]
	if c == nil || !probedCooldown(c, nanos(ev.At)) {
		return domain.Event{}, false
	}
	r := openCredProbe(c)
	if r == nil || r.at.After(ev.At) {
		return domain.Event{}, false
	}
	id := c.cooldown.cd.ID()
	return domain.Event{
		V: domain.SchemaVersion, Kind: domain.KindCooldownLifted,
		ID: domain.CooldownLiftID(id), At: ev.At.UTC(),
		CooldownLift: &domain.CooldownLift{Credential: c.name, Model: domain.AllModels, By: domain.LiftedByRecovery, CooldownID: id},
	}, true
}

// applyCooldownLift ends the credential's auth cooldown the lift names;
// a lift of any other cooldown (an older one, or one already over)
// changes nothing.
func (s *State) applyCooldownLift(l domain.CooldownLift) bool {
	if l.Credential == "" || l.Model != domain.AllModels || l.By != domain.LiftedByRecovery || l.CooldownID == "" {
		return false
	}
	c := s.creds[l.Credential]
	if c == nil || c.cooldown == nil || c.cooldown.cd.ID() != l.CooldownID {
		return true
	}
	c.cooldown, c.probe = nil, nil
	s.touchCred(c)
	return true
}
