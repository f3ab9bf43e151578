package projections

import (
	"bytes"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// What Apply takes and in what order: events it cannot use, every kind it
// knows, sequences, determinism and the order inside batch messages.

func TestApplySkipsWhatItCannotUse(t *testing.T) {
	newer := outcome(0, "a", "gpt", 429)
	newer.V = domain.SchemaVersion + 1
	tests := []struct {
		name string
		ev   domain.Event
		want Skipped
	}{
		{"unknown kind", domain.Event{V: 1, Kind: "quota.exhausted", At: t0}, Skipped{UnknownKind: 1}},
		{"newer schema version", newer, Skipped{NewerVersion: 1}},
		{"missing payload", domain.Event{V: 1, Kind: domain.KindBanImposed, At: t0}, Skipped{Invalid: 1}},
		{"wrong payload", domain.Event{V: 1, Kind: domain.KindBanImposed, At: t0, Unban: &domain.Unban{Credential: "a"}}, Skipped{Invalid: 1}},
		{"outcome without credential", outcome(0, "", "gpt", 429), Skipped{Invalid: 1}},
		{"outcome without model", outcome(0, "a", "", 429), Skipped{Invalid: 1}},
		{"ban without credential", autoBan(0, "x", "", "gpt", 429, m), Skipped{Invalid: 1}},
		{"unban by an unknown way", domain.Event{V: 1, Kind: domain.KindBanLifted, At: t0,
			Unban: &domain.Unban{Credential: "a", By: "magic"}}, Skipped{Invalid: 1}},
		{"expiry without ban id", expiry(0, "a", "gpt", ""), Skipped{Invalid: 1}},
		{"cooldown without model", cooldown(0, "a", "", m), Skipped{Invalid: 1}},
		{"withheld without streak", withheld(0, "a", "gpt", domain.Pos{}), Skipped{Invalid: 1}},
		{"shadow ban of the wildcard", shadowed(0, "s", "a", "*", m), Skipped{Invalid: 1}},
		{"bench without model", bench(0, "", m), Skipped{Invalid: 1}},
		{"unbench without model", unbench(0, ""), Skipped{Invalid: 1}},
		{"unbench of the wildcard", unbench(0, "*"), Skipped{Invalid: 1}},
		{"unbench by expiry", domain.Event{V: 1, Kind: domain.KindModelUnbenched, At: t0,
			Unbench: &domain.Unbench{Model: "gpt", By: domain.LiftedByExpiry}}, Skipped{Invalid: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := fold(numbered(outcome(0, "a", "gpt", 500)))
			before := base.Snapshot().StateView(t0)
			ev := tc.ev
			ev.Seq = 2
			s := Apply(base, ev)
			if s.Skipped() != tc.want {
				t.Fatalf("skipped = %+v, want %+v", s.Skipped(), tc.want)
			}
			if s.Seq() != 2 {
				t.Fatalf("seq = %d, want 2: a skipped event still advances the sequence", s.Seq())
			}
			after := s.Snapshot().StateView(t0)
			if len(after.Pairs) != len(before.Pairs) || len(after.Bans) != 0 ||
				!sameStrCounts(after.Pairs[0].ErrorCodeCounts, before.Pairs[0].ErrorCodeCounts) {
				t.Fatalf("a skipped event changed the state: %+v", after)
			}
		})
	}
}

func sameStrCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestApplyEveryKnownKindFolds(t *testing.T) {
	payloads := map[domain.Kind]domain.Event{
		domain.KindOutcomeRecorded:         outcome(0, "a", "gpt", 500),
		domain.KindBanImposed:              autoBan(0, "b", "a", "gpt", 500, m),
		domain.KindBanLifted:               unban(0, "a", ""),
		domain.KindCooldownStarted:         cooldown(0, "a", "gpt", m),
		domain.KindModelBenched:            bench(0, "gpt", m),
		domain.KindFallbackSettingsChanged: settings(0, 2),
		domain.KindModelUnbenched:          unbench(0, "gpt"),
		domain.KindBanWithheld:             withheld(0, "a", "gpt", domain.Pos{Seq: 1}),
		domain.KindBanShadowed:             shadowed(0, "s", "a", "gpt", m),
		domain.KindProbeClaimed:            probeClaim(0, "b", "a", "gpt", 0, "r1"),
		domain.KindPolicyChanged:           policyChanged(0, 3),
		domain.KindReplicaHeartbeat: {V: domain.SchemaVersion, Kind: domain.KindReplicaHeartbeat, At: t0,
			Heartbeat: &domain.Heartbeat{Replica: "r1", Instance: "i1"}},
		domain.KindCooldownLifted: {V: domain.SchemaVersion, Kind: domain.KindCooldownLifted, At: t0,
			CooldownLift: &domain.CooldownLift{Credential: "a", Model: domain.AllModels, By: domain.LiftedByRecovery, CooldownID: "c"}},
	}
	for _, k := range domain.Kinds {
		ev, ok := payloads[k]
		if !ok {
			t.Errorf("kind %q has no case in this test (and maybe none in Apply)", k)
			continue
		}
		if s := Apply(nil, ev); s.Skipped() != (Skipped{}) {
			t.Errorf("kind %q was skipped: %+v", k, s.Skipped())
		}
		bare := domain.Event{V: domain.SchemaVersion, Kind: k, At: t0}
		if s := Apply(nil, bare); s.Skipped() != (Skipped{Invalid: 1}) {
			t.Errorf("kind %q without payload: skipped %+v, want one invalid", k, s.Skipped())
		}
	}
}

func TestApplySequence(t *testing.T) {
	evs := numbered(outcome(0, "a", "gpt", 429), outcome(m, "a", "gpt", 429))
	s := fold(evs)
	if s.Seq() != 2 || !s.LastEventAt().Equal(at(m)) {
		t.Fatalf("seq %d at %v, want 2 at %v", s.Seq(), s.LastEventAt(), at(m))
	}
	// A replay overlapping what was applied must not count twice.
	s = Apply(s, evs[1])
	if got := counts(s, "a", "gpt"); got[429] != 2 {
		t.Fatalf("re-applying seq 2 counted again: %v", got)
	}
	// Events without a sequence (tests, tools) do not move it.
	s = Apply(s, outcome(2*m, "a", "gpt", 429))
	if s.Seq() != 2 || counts(s, "a", "gpt")[429] != 3 {
		t.Fatalf("seq %d counts %v after an unnumbered event", s.Seq(), counts(s, "a", "gpt"))
	}
}

func TestApplyIsDeterministic(t *testing.T) {
	evs := numbered(
		outcome(0, "a", "gpt", 429), outcome(m, "b", "gpt", 500), autoBan(2*m, "b1", "a", "gpt", 429, 5*m),
		adminBan(3*m, "w", "b", "*", "drain", 0), cooldown(4*m, "c", "gpt", m), bench(5*m, "llama", m),
		outcome(8*m, "a", "gpt", 500), unban(9*m, "b", ""), settings(10*m, 4),
	)
	first, err := fold(evs).MarshalCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		again, err := fold(evs).MarshalCheckpoint()
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != string(first) {
			t.Fatalf("replay %d differs:\n%s\n%s", i, first, again)
		}
	}
}

// Events of one batch message share its Seq and are ordered by Index: an
// event at or before the applied position is a re-delivery and ignored, the
// streak and the bench window record full positions, and a checkpoint
// taken inside the batch resumes at the batch's message.
func TestApplyOrdersEventsInsideBatches(t *testing.T) {
	at := func(ev domain.Event, seq uint64, index uint32) domain.Event {
		ev.Seq, ev.Index = seq, index
		return ev
	}
	batch := []domain.Event{
		at(outcome(0, "a", "gpt", 200), 5, 0),
		at(outcome(time.Second, "a", "gpt", 502), 5, 1),
		at(outcome(2*time.Second, "b", "gpt", 502), 5, 2),
	}
	s := NewState()
	s = Apply(s, batch[0])
	s = Apply(s, batch[1])
	mid, err := s.MarshalCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	s = Apply(s, batch[2])
	s = Apply(s, batch[1]) // re-delivered: ignored
	probe := outcome(3*time.Second, "a", "gpt", 404)
	if f := s.Facts(probe); f.Counts[502] != 1 || f.Streak != (domain.Pos{Seq: 5, Index: 1}) {
		t.Fatalf("facts %+v, want one 502 in a streak from 5.1", f)
	}
	w := s.Snapshot().ModelFailures("gpt")
	if len(w) != 2 || w[0].Seq != 5 || w[0].Index != 1 || w[1].Index != 2 {
		t.Fatalf("bench window %+v, want the failures at 5.1 and 5.2", w)
	}
	if s.Pos() != (domain.Pos{Seq: 5, Index: 2}) {
		t.Fatalf("applied up to %v, want 5.2", s.Pos())
	}

	// Resuming from the checkpoint taken at 5.1 reads message 5 again and
	// applies only what it had not.
	r, err := UnmarshalCheckpoint(mid)
	if err != nil {
		t.Fatal(err)
	}
	if r.Pos() != (domain.Pos{Seq: 5, Index: 1}) || r.Pos().ResumeSeq() != 5 {
		t.Fatalf("checkpoint at %v resumes at %d, want 5.1 and message 5", r.Pos(), r.Pos().ResumeSeq())
	}
	for _, ev := range batch {
		r = Apply(r, ev)
	}
	a, _ := r.MarshalCheckpoint()
	b, _ := s.MarshalCheckpoint()
	if !bytes.Equal(a, b) {
		t.Fatalf("resumed state differs:\n%s\nwant\n%s", a, b)
	}
}
