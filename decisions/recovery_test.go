package decisions

import (
	"context"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

func success(d time.Duration, cred, model string) domain.Event {
	return domain.Event{
		V: domain.SchemaVersion, Kind: domain.KindOutcomeRecorded, At: t0.Add(d),
		Outcome: &domain.Outcome{Credential: cred, Model: model, Status: 200, Class: domain.ClassOK, Attempt: 1},
	}
}

// A live success on a pair under an automatic ban publishes its lift by
// recovery, guarded by the success as its cause; under a manual ban it
// publishes nothing.
func TestASuccessOnAnAutomaticallyBannedPairLiftsItByRecovery(t *testing.T) {
	r := newRig(t, nil)
	for i := range 3 {
		r.apply(failure(time.Duration(i)*time.Second, "cred-a", "gpt-test"))
	}
	r.apply(ban("admin/1", "cred-b", "gpt-test", time.Hour))
	r.engine.Start(context.Background())
	imposed := r.log.next(t)
	r.applyAt(imposed.Seq, imposed)
	r.apply(success(time.Minute, "cred-b", "gpt-test"))
	ok := r.apply(success(time.Minute, "cred-a", "gpt-test"))
	lift := r.log.next(t)
	if lift.Kind != domain.KindBanLifted || lift.ID != domain.RecoveryID(imposed.ID) {
		t.Fatalf("published %s %q, want the lift %q", lift.Kind, lift.ID, domain.RecoveryID(imposed.ID))
	}
	if u := lift.Unban; u.By != domain.LiftedByRecovery || u.BanID != imposed.ID || u.Credential != "cred-a" || u.Model != "gpt-test" {
		t.Fatalf("unban = %+v", u)
	}
	if c := r.log.causes[len(r.log.causes)-1]; c != ok.Seq {
		t.Fatalf("cause %d, want the success at %d", c, ok.Seq)
	}
	// The queue empties once the lift's publish has returned; nothing
	// else may have been published then.
	testkit.Eventually(t, "the lift to leave the queue", func() bool { return r.engine.Queued() == 0 })
	if evs := r.log.events(); len(evs) != 2 {
		t.Fatalf("published %d events, want the ban and its lift alone (the manual ban's success must decide nothing)", len(evs))
	}
}

// The prober claims a due probe on its clock, under the id of the ban and
// interval, naming its replica.
func TestProberClaimsDueProbes(t *testing.T) {
	r := newRig(t, nil)
	for i := range 3 {
		r.apply(failure(time.Duration(i)*time.Second, "cred-a", "gpt-test"))
	}
	r.engine.Start(context.Background())
	imposed := r.log.next(t)
	r.applyAt(imposed.Seq, imposed)
	pol := domain.RecoveryPolicy{ProbeAfter: time.Minute, ProbeMax: 10 * time.Minute}
	if _, err := NewProber(ProberConfig{Log: r.log, Snapshot: r.live.Load, Clock: r.clock, Policy: pol}); err == nil {
		t.Fatal("a prober without a replica name was accepted")
	}
	p, err := NewProber(ProberConfig{Log: r.log, Snapshot: r.live.Load, Clock: r.clock, Policy: pol, Replica: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	p.Start(context.Background())
	t.Cleanup(func() { p.Stop(); p.Wait() })
	r.clock.Advance(time.Minute) // from t0: 58 s after the ban at t0+2s
	r.clock.Advance(2 * time.Second)
	claim := r.log.next(t)
	if claim.Kind != domain.KindProbeClaimed || claim.ID != domain.ProbeClaimID(imposed.ID, 0) {
		t.Fatalf("published %s %q", claim.Kind, claim.ID)
	}
	if pc := claim.Probe; pc.Replica != "r1" || pc.Interval != 0 || pc.BanID != imposed.ID || !claim.At.Equal(t0.Add(62*time.Second)) {
		t.Fatalf("claim at %s = %+v", claim.At, pc)
	}
	// Until the claim is folded into the snapshot, a later tick claims the
	// same interval again under the same id (the log keeps one copy), so a
	// tick that slipped in counts a second publish.
	// The counter moves once the publish has returned.
	testkit.Eventually(t, "the claim to be counted", func() bool { return p.Claimed() >= 1 })
	if p.Failed() != 0 {
		t.Fatalf("claimed %d, failed %d", p.Claimed(), p.Failed())
	}
	for range p.Claimed() - 1 {
		if again := r.log.next(t); again.ID != claim.ID {
			t.Fatalf("a second claim %q, want only %q again", again.ID, claim.ID)
		}
	}
}
