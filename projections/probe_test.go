package projections

import (
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

func probeClaim(d time.Duration, banID, cred, model string, n int, replica string) domain.Event {
	return domain.Event{V: domain.SchemaVersion, Kind: domain.KindProbeClaimed, ID: domain.ProbeClaimID(banID, n), At: at(d),
		Probe: &domain.ProbeClaim{Credential: cred, Model: model, BanID: banID, Interval: n, Replica: replica}}
}

func recoveryLift(d time.Duration, cred, model, banID string) domain.Event {
	return domain.Event{V: domain.SchemaVersion, Kind: domain.KindBanLifted, ID: domain.RecoveryID(banID), At: at(d),
		Unban: &domain.Unban{Credential: cred, Model: model, By: domain.LiftedByRecovery, BanID: banID}}
}

func foldProbes(evs ...domain.Event) *State {
	s := NewState()
	for i, ev := range evs {
		ev.Seq = uint64(i + 1)
		s = Apply(s, ev)
	}
	return s
}

var recoveryPolicy = domain.RecoveryPolicy{ProbeAfter: time.Minute, ProbeMax: 5 * time.Minute}

// dueAt lists the claims the snapshot finds due at d, as "cred/model#n".
func dueAt(s *State, d time.Duration) []string {
	var out []string
	for _, ev := range s.Snapshot().DueProbes(at(d), recoveryPolicy, "r1") {
		out = append(out, ev.Probe.Credential+"/"+ev.Probe.Model+"#"+string(rune('0'+ev.Probe.Interval)))
	}
	return out
}

func TestDueProbesFollowTheDoublingSchedule(t *testing.T) {
	ban := autoBan(0, "b1", "a", "gpt", 503, 0)
	cases := []struct {
		name   string
		claims []domain.Event
		at     time.Duration
		want   []string
	}{
		{"not yet", nil, time.Minute - time.Second, nil},
		{"first after probe_after", nil, time.Minute, []string{"a/gpt#0"}},
		{"second waits twice that after the first claim", []domain.Event{probeClaim(time.Minute, "b1", "a", "gpt", 0, "r1")},
			3*time.Minute - time.Second, nil},
		{"second", []domain.Event{probeClaim(time.Minute, "b1", "a", "gpt", 0, "r1")}, 3 * time.Minute, []string{"a/gpt#1"}},
		{"gap capped at probe_max", []domain.Event{
			probeClaim(time.Minute, "b1", "a", "gpt", 0, "r1"), probeClaim(3*time.Minute, "b1", "a", "gpt", 1, "r1"),
			probeClaim(7*time.Minute, "b1", "a", "gpt", 2, "r1")}, 12 * time.Minute, []string{"a/gpt#3"}},
		{"claim of another ban ignored", []domain.Event{probeClaim(time.Minute, "old", "a", "gpt", 0, "r1")},
			time.Minute, []string{"a/gpt#0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := foldProbes(append([]domain.Event{ban}, c.claims...)...)
			if got := dueAt(s, c.at); !equalStrings(got, c.want) {
				t.Fatalf("due = %v, want %v", got, c.want)
			}
		})
	}
	if g := recoveryPolicy.Gap(3); g != 5*time.Minute {
		t.Fatalf("gap 3 = %s, want the 5m cap", g)
	}
}

func TestDueProbesSkipWhatIsNeverProbed(t *testing.T) {
	cases := []struct {
		name string
		evs  []domain.Event
	}{
		{"manual ban", []domain.Event{adminBan(0, "m1", "a", "gpt", "admin: x", 0)}},
		{"retry-after cooldown", []domain.Event{autoBan(0, "b1", "a", "gpt", 503, 0), cooldown(0, "a", "gpt", time.Hour)}},
		{"bench", []domain.Event{autoBan(0, "b1", "a", "gpt", 503, 0), bench(0, "gpt", time.Hour)}},
		{"wildcard ban", []domain.Event{autoBan(0, "b1", "a", "gpt", 503, 0), adminBan(0, "w", "a", domain.AllModels, "admin: x", 0)}},
		{"expired ban", []domain.Event{autoBan(0, "b1", "a", "gpt", 503, 30*time.Second)}},
		{"lifted by recovery", []domain.Event{autoBan(0, "b1", "a", "gpt", 503, 0), recoveryLift(10*time.Second, "a", "gpt", "b1")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := dueAt(foldProbes(c.evs...), time.Hour/2); len(got) != 0 {
				t.Fatalf("due = %v, want none", got)
			}
		})
	}
	if got := foldProbes(autoBan(0, "b1", "a", "gpt", 503, 0)).Snapshot().DueProbes(at(time.Hour), domain.RecoveryPolicy{}, "r1"); got != nil {
		t.Fatalf("probes off: due = %v", got)
	}
}

func TestBlockedCarriesTheClaimAndManualBans(t *testing.T) {
	s := foldProbes(autoBan(0, "b1", "a", "gpt", 503, 0), probeClaim(time.Minute, "b1", "a", "gpt", 0, "r1"),
		adminBan(0, "m1", "b", "gpt", "admin: x", time.Hour), autoBan(0, "b2", "c", "gpt", 503, time.Hour))
	snap := s.Snapshot()
	now := at(2 * time.Minute)
	if b, _ := snap.Blocked("a", "gpt", now); b.Probe == nil || b.Probe.Replica != "r1" || b.Manual || !b.Permanent {
		t.Fatalf("a: %+v", b)
	}
	if b, _ := snap.Blocked("b", "gpt", now); !b.Manual || b.Probe != nil {
		t.Fatalf("b: %+v", b)
	}
	if b, _ := snap.Blocked("c", "gpt", now); b.Manual || b.Probe != nil || b.Until.IsZero() {
		t.Fatalf("c: %+v", b)
	}
	// A cooldown on the probed pair withholds its probe.
	s = Apply(s, withSeq(cooldown(2*time.Minute, "a", "gpt", time.Minute), 10))
	if b, _ := s.Snapshot().Blocked("a", "gpt", at(2*time.Minute)); b.Probe != nil {
		t.Fatalf("a cooling down still offers its probe: %+v", b)
	}
}

func TestClaimsFoldFirstWins(t *testing.T) {
	s := foldProbes(autoBan(0, "b1", "a", "gpt", 503, 0),
		probeClaim(time.Minute, "b1", "a", "gpt", 0, "r1"),
		probeClaim(time.Minute+time.Second, "b1", "a", "gpt", 0, "r2"),
		probeClaim(time.Minute+time.Second, "b1", "a", "gpt", 2, "r2"))
	v := s.Snapshot().Pair(domain.Key{Credential: "a", Model: "gpt"}, at(2*time.Minute))
	if v.Probe == nil || v.Probe.Replica != "r1" || v.Probe.Interval != 0 {
		t.Fatalf("probe = %+v, want r1's interval 0", v.Probe)
	}
	if s.Skipped() != (Skipped{}) {
		t.Fatalf("skipped %+v", s.Skipped())
	}
	bad := probeClaim(time.Minute, "", "a", "gpt", 0, "r1")
	if s := foldProbes(bad); s.Skipped().Invalid != 1 {
		t.Fatalf("a claim without ban id: skipped %+v", s.Skipped())
	}
}

func TestRecoveryLift(t *testing.T) {
	ok := outcome(time.Minute, "a", "gpt", 200)
	cases := []struct {
		name string
		evs  []domain.Event
		ev   domain.Event
		want bool
	}{
		{"success on an automatic ban", []domain.Event{autoBan(0, "b1", "a", "gpt", 503, 0)}, ok, true},
		{"failure", []domain.Event{autoBan(0, "b1", "a", "gpt", 503, 0)}, outcome(time.Minute, "a", "gpt", 503), false},
		{"manual ban", []domain.Event{adminBan(0, "m1", "a", "gpt", "admin: x", 0)}, ok, false},
		{"no ban", nil, ok, false},
		{"ended ban", []domain.Event{autoBan(0, "b1", "a", "gpt", 503, time.Second)}, ok, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := foldProbes(append(c.evs, c.ev)...)
			ev := c.ev
			ev.Seq = uint64(len(c.evs) + 1)
			lift, got := s.RecoveryLift(ev)
			if got != c.want {
				t.Fatalf("lift = %v, want %v", got, c.want)
			}
			if !got {
				return
			}
			if lift.ID != domain.RecoveryID("b1") || lift.Unban.By != domain.LiftedByRecovery || lift.Unban.BanID != "b1" {
				t.Fatalf("lift = %+v %+v", lift, lift.Unban)
			}
			s = Apply(s, withSeq(lift, 99))
			if _, banned := s.Snapshot().Blocked("a", "gpt", at(time.Minute)); banned {
				t.Fatal("still banned after the lift")
			}
		})
	}
}

func TestCheckpointKeepsTheClaim(t *testing.T) {
	s := foldProbes(autoBan(0, "b1", "a", "gpt", 503, 0), probeClaim(time.Minute, "b1", "a", "gpt", 0, "r1"))
	data, err := s.MarshalCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	r, err := UnmarshalCheckpoint(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := dueAt(r, 3*time.Minute); !equalStrings(got, []string{"a/gpt#1"}) {
		t.Fatalf("after the checkpoint due = %v, want the second probe", got)
	}
	if b, _ := r.Snapshot().Blocked("a", "gpt", at(2*time.Minute)); b.Probe == nil || b.Probe.Replica != "r1" {
		t.Fatalf("the claim did not survive the checkpoint: %+v", b)
	}
}

func withSeq(ev domain.Event, seq uint64) domain.Event {
	ev.Seq = seq
	return ev
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
