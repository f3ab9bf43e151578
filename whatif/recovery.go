package whatif

import (
	"github.com/airouter/airouter/domain"
)

// Recovery in the proposed run. Recorded probe claims and lifts by
// recovery (of bans and of auth cooldowns) are decisions of the recorded
// policy and are dropped. The proposed run probes on the proposed policy's
// own schedule (fail2ban.recovery): a recorded outcome on a pair the
// proposed run holds under an automatic ban whose next probe is due by
// the proposed schedule is taken as that probe (its claim is folded before
// it, projections.State.DueProbe), and if it succeeded it lifts the ban by
// recovery, with the fold's own rule (State.RecoveryLift). Besides, a
// recorded success that the recorded router reached by panic routing (it
// lifted a ban of which no probe was claimed) lifts the proposed run's ban
// too: panic routing is routing, not ban policy. Any other recorded
// success on a pair the proposed run bans lifts nothing: the proposed
// router would not have sent it. Auth cooldowns are not probed in the
// proposed run; the answer compares bans.

// RecoveryAssumption is the part of the answer's assumption about
// recovery probes.
const RecoveryAssumption = "a recorded success on a pair banned in the proposed run lifts that ban by recovery only if the proposed policy had a probe of it due then, or the recorded request was panic-routed"

// whatifReplica names the proposed run's prober in its claims.
const whatifReplica = "whatif"

// claimProbe folds the proposed run's probe claim of the outcome's pair
// when one is due at the outcome, and reports whether it did: the outcome
// is then the probe.
func (r *Run) claimProbe(ev domain.Event) bool {
	o := ev.Outcome
	if o == nil || !r.opt.Policy.Recovery.On() {
		return false
	}
	claim, ok := r.proposed.state.DueProbe(o.Key(), ev.At, r.opt.Policy.Recovery, whatifReplica)
	if ok {
		r.proposed.apply(claim, false)
	}
	return ok
}

// recovery is the lift by recovery of the proposed run's automatic ban on
// the outcome's pair when the outcome succeeded and was the proposed run's
// probe.
func (r *Run) recovery(ev domain.Event, probe bool) (domain.Event, bool) {
	if !probe || ev.Outcome == nil || !ev.Outcome.Success() {
		return domain.Event{}, false
	}
	d, ok := r.proposed.state.RecoveryLift(ev)
	if !ok || d.Kind != domain.KindBanLifted {
		return domain.Event{}, false
	}
	return d, true
}

// panicLift reports whether ev is a recorded lift by recovery of a ban of
// which the actual run, before folding ev, holds no probe claim: the lift
// of a panic-routed success.
func (r *Run) panicLift(ev domain.Event) bool {
	u := ev.Unban
	if ev.Kind != domain.KindBanLifted || u == nil || u.By != domain.LiftedByRecovery || u.Model == "" || u.Model == domain.AllModels {
		return false
	}
	b, held := r.actual.snapshot().Blocked(u.Credential, u.Model, ev.At)
	return held && b.Reason == domain.BlockBanned && b.Probe == nil
}

// liftAsRecorded lifts by recovery the proposed run's automatic ban on the
// pair of the recorded panic lift ev, as the success it followed would.
func (r *Run) liftAsRecorded(ev domain.Event) {
	success := domain.Event{V: domain.SchemaVersion, Kind: domain.KindOutcomeRecorded, At: ev.At,
		Outcome: &domain.Outcome{Credential: ev.Unban.Credential, Model: ev.Unban.Model, Status: 200, Class: domain.ClassOK}}
	if d, ok := r.proposed.state.RecoveryLift(success); ok && d.Kind == domain.KindBanLifted {
		r.proposed.apply(d, false)
	}
}
