package projections

import (
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// authCooldown is the cooldown of every model of cred for a 401 at d,
// caused by the outcome at log position seq.
func authCooldown(d time.Duration, cred string, dur time.Duration, seq uint64) domain.Event {
	return domain.Event{V: domain.SchemaVersion, Kind: domain.KindCooldownStarted, At: at(d),
		Cooldown: &domain.Cooldown{Credential: cred, Model: domain.AllModels, Until: at(d + dur), Status: 401,
			Reason: "auth: 401", CauseSeq: seq}}
}

// authID is the id of authCooldown(_, "a", _, 1).
var authID = domain.Cooldown{Credential: "a", Model: domain.AllModels, CauseSeq: 1}.ID()

func TestAuthCooldownGetsProbesOnTheBanSchedule(t *testing.T) {
	cd := authCooldown(0, "a", 10*time.Minute, 1)
	cases := []struct {
		name string
		evs  []domain.Event
		at   time.Duration
		want []string
	}{
		{"not yet", nil, time.Minute - time.Second, nil},
		{"first after probe_after", nil, time.Minute, []string{"a/*#0"}},
		{"second twice that after the first claim", []domain.Event{probeClaim(time.Minute, authID, "a", "*", 0, "r1")},
			3 * time.Minute, []string{"a/*#1"}},
		{"not before it", []domain.Event{probeClaim(time.Minute, authID, "a", "*", 0, "r1")},
			3*time.Minute - time.Second, nil},
		{"none once the cooldown ended", nil, 10 * time.Minute, nil},
		{"none under a ban of the whole credential", []domain.Event{adminBan(0, "w", "a", domain.AllModels, "admin: x", 0)},
			time.Minute, nil},
		{"a claim of another cooldown is ignored", []domain.Event{probeClaim(time.Minute, "cooldown/a/*/7", "a", "*", 0, "r1")},
			time.Minute, []string{"a/*#0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := foldProbes(append([]domain.Event{outcome(0, "a", "gpt", 401), cd}, c.evs...)...)
			if got := dueAt(s, c.at); !equalStrings(got, c.want) {
				t.Fatalf("due = %v, want %v", got, c.want)
			}
		})
	}
	retry := foldProbes(outcome(0, "a", "gpt", 401), cooldown(0, "a", domain.AllModels, 10*time.Minute))
	if got := dueAt(retry, time.Hour/2); got != nil {
		t.Fatalf("a credential cooldown that is not for a 401 got probes: %v", got)
	}
}

// The claim rides on the block of every model of the credential while
// only the auth cooldown holds the pair, and a success after the claim
// lifts the cooldown; a 401 keeps it.
func TestAuthCooldownProbeClaimAndLift(t *testing.T) {
	base := []domain.Event{outcome(0, "a", "gpt", 401), authCooldown(0, "a", 10*time.Minute, 1),
		probeClaim(time.Minute, authID, "a", "*", 0, "r1")}
	s := foldProbes(base...)
	snap := s.Snapshot()
	for _, model := range []string{"gpt", "other"} {
		b, ok := snap.Blocked("a", model, at(time.Minute))
		if !ok || b.Reason != domain.BlockCoolingDown || b.Probe == nil || b.Probe.BanID != authID || b.Probe.Model != domain.AllModels {
			t.Fatalf("%s: block %+v %v, want the cooldown with its claim", model, b, ok)
		}
	}
	held := foldProbes(append(base, cooldown(time.Minute, "a", "gpt", time.Hour))...)
	if b, _ := held.Snapshot().Blocked("a", "gpt", at(2*time.Minute)); b.Probe != nil {
		t.Fatalf("a pair also cooling for its own Retry-After carries the claim: %+v", b)
	}

	fail := outcome(2*time.Minute, "a", "gpt", 401)
	if _, ok := foldProbes(append(base, fail)...).RecoveryLift(withSeq(fail, 4)); ok {
		t.Fatal("a 401 on the probe lifts the cooldown")
	}
	early := foldProbes(base[:2]...)
	if _, ok := early.RecoveryLift(withSeq(outcome(30*time.Second, "a", "gpt", 200), 3)); ok {
		t.Fatal("a success without a claim lifts the cooldown")
	}

	ok := outcome(2*time.Minute, "a", "gpt", 200)
	s = foldProbes(append(base, ok)...)
	lift, got := s.RecoveryLift(withSeq(ok, 4))
	if !got || lift.Kind != domain.KindCooldownLifted || lift.ID != domain.CooldownLiftID(authID) ||
		lift.CooldownLift.CooldownID != authID || lift.CooldownLift.By != domain.LiftedByRecovery {
		t.Fatalf("lift = %+v %v", lift, got)
	}
	s = Apply(s, withSeq(lift, 5))
	if b, blocked := s.Snapshot().Blocked("a", "other", at(2*time.Minute)); blocked {
		t.Fatalf("still held after the lift: %+v", b)
	}
	if s.Skipped() != (Skipped{}) {
		t.Fatalf("skipped %+v", s.Skipped())
	}
	stale := foldProbes(append(base, withSeq(domain.Event{V: domain.SchemaVersion, Kind: domain.KindCooldownLifted, At: at(2 * time.Minute),
		CooldownLift: &domain.CooldownLift{Credential: "a", Model: "*", By: domain.LiftedByRecovery, CooldownID: "cooldown/a/*/9"}}, 4))...)
	if _, blocked := stale.Snapshot().Blocked("a", "gpt", at(2*time.Minute)); !blocked {
		t.Fatal("a lift naming another cooldown ended this one")
	}
}

func TestCheckpointKeepsTheAuthCooldownClaim(t *testing.T) {
	s := foldProbes(outcome(0, "a", "gpt", 401), authCooldown(0, "a", 10*time.Minute, 1),
		probeClaim(time.Minute, authID, "a", "*", 0, "r1"))
	data, err := s.MarshalCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	r, err := UnmarshalCheckpoint(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := dueAt(r, 3*time.Minute); !equalStrings(got, []string{"a/*#1"}) {
		t.Fatalf("after the checkpoint due = %v, want the second probe", got)
	}
}
