package projections

import (
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// withheld is a ban.withheld of the pair's streak starting at streak.
func withheld(d time.Duration, cred, model string, streak domain.Pos) domain.Event {
	return domain.Event{V: domain.SchemaVersion, Kind: domain.KindBanWithheld, At: at(d),
		ID: "withheld/" + cred + "/" + model + "/" + streak.String(),
		Withheld: &domain.Withheld{Credential: cred, Model: model, ErrorCode: 503, Rule: "3 x 503",
			Reason: "ejection cap 50%", Cap: 50, Banned: 1, Pairs: 2, Failures: 3,
			StreakSeq: streak.Seq, StreakIndex: streak.Index}}
}

// shadowed is a ban.shadowed of the pair for dur (permanent when 0).
func shadowed(d time.Duration, id, cred, model string, dur time.Duration) domain.Event {
	ev := autoBan(d, id, cred, model, 400, dur)
	ev.Kind, ev.Shadowed, ev.Ban = domain.KindBanShadowed, ev.Ban, nil
	ev.Shadowed.Reason = "3 x 400 (rule 400: max_attempts 3, ban 5m)"
	return ev
}

func ladderCooldown(d time.Duration, cred, model string, dur time.Duration, step int) domain.Event {
	ev := cooldown(d, cred, model, dur)
	ev.Cooldown.Step = step
	return ev
}

func TestGuardsFold(t *testing.T) {
	m := time.Minute
	tests := []struct {
		name  string
		evs   []domain.Event
		probe domain.Event // an outcome judged after evs: its Facts are checked
		want  func(t *testing.T, f domain.Facts, s *State)
	}{
		{"a withholding of the current streak is remembered",
			[]domain.Event{outcome(0, "a", "gpt", 503), outcome(1, "a", "gpt", 503), withheld(2, "a", "gpt", domain.Pos{Seq: 1})},
			outcome(3, "a", "gpt", 503),
			func(t *testing.T, f domain.Facts, _ *State) {
				if f.Withheld != (domain.Pos{Seq: 1}) || f.Streak != f.Withheld {
					t.Errorf("withheld %v streak %v, want both 1", f.Withheld, f.Streak)
				}
			}},
		{"a withholding of an ended streak is not",
			[]domain.Event{outcome(0, "a", "gpt", 503), outcome(1, "a", "gpt", 200), outcome(2, "a", "gpt", 503), withheld(3, "a", "gpt", domain.Pos{Seq: 1})},
			outcome(4, "a", "gpt", 503),
			func(t *testing.T, f domain.Facts, _ *State) {
				if !f.Withheld.IsZero() || f.Streak != (domain.Pos{Seq: 3}) {
					t.Errorf("withheld %v streak %v, want none and 3", f.Withheld, f.Streak)
				}
			}},
		{"a success ends the withheld streak",
			[]domain.Event{outcome(0, "a", "gpt", 503), withheld(1, "a", "gpt", domain.Pos{Seq: 1}), outcome(2, "a", "gpt", 200)},
			outcome(3, "a", "gpt", 503),
			func(t *testing.T, f domain.Facts, _ *State) {
				if !f.Withheld.IsZero() {
					t.Errorf("withheld %v after a success", f.Withheld)
				}
			}},
		{"the cap's facts count the model's named pairs and their bans",
			[]domain.Event{outcome(0, "a", "gpt", 503), outcome(1, "b", "gpt", 200), outcome(2, "c", "gpt", 200),
				outcome(3, "c", "other", 200), autoBan(4, "f2b/b", "b", "gpt", 503, m), adminBan(5, "w", "c", "*", "drain", 0)},
			outcome(6, "a", "gpt", 503),
			func(t *testing.T, f domain.Facts, _ *State) {
				if f.ModelPairs != 3 || f.ModelBanned != 2 {
					t.Errorf("pairs %d banned %d, want 3 and 2 (a wildcard ban bans its pairs)", f.ModelPairs, f.ModelBanned)
				}
			}},
		{"an ended ban no longer counts for the cap",
			[]domain.Event{outcome(0, "a", "gpt", 503), outcome(1, "b", "gpt", 200), autoBan(2, "f2b/b", "b", "gpt", 503, m)},
			outcome(2*m, "a", "gpt", 503),
			func(t *testing.T, f domain.Facts, _ *State) {
				if f.ModelPairs != 2 || f.ModelBanned != 0 {
					t.Errorf("pairs %d banned %d, want 2 and 0", f.ModelPairs, f.ModelBanned)
				}
			}},
		{"a shadow ban shows on the pair and bans nothing",
			[]domain.Event{outcome(0, "a", "gpt", 400), shadowed(1, "shadow/a/gpt/1", "a", "gpt", 5*m)},
			outcome(2, "a", "gpt", 400),
			func(t *testing.T, f domain.Facts, s *State) {
				snap := s.Snapshot()
				v := snap.Pair(domain.Key{Credential: "a", Model: "gpt"}, at(2))
				if !f.WouldBan || f.Banned || !v.WouldBan || v.Banned || v.WouldBanUntil == nil || !v.WouldBanUntil.Equal(at(1+5*m)) ||
					v.WouldBanReason != "3 x 400 (rule 400: max_attempts 3, ban 5m)" {
					t.Errorf("facts %+v view %+v: want a shadow ban and no ban", f, v)
				}
				if _, blocked := snap.Blocked("a", "gpt", at(2)); blocked || len(snap.Bans(at(2))) != 0 {
					t.Error("a shadow ban blocks the pair or lists as a ban")
				}
				if counts(s, "a", "gpt")[400] != 2 {
					t.Errorf("counts %v: a shadow-banned pair keeps counting", counts(s, "a", "gpt"))
				}
			}},
		{"a shadow ban ends at its until and resets the counters",
			[]domain.Event{outcome(0, "a", "gpt", 400), shadowed(1, "s1", "a", "gpt", m)},
			outcome(2*m, "a", "gpt", 400),
			func(t *testing.T, f domain.Facts, s *State) {
				if f.WouldBan || f.Counts[400] != 1 || f.Streak != (domain.Pos{Seq: 3}) {
					t.Errorf("facts %+v: want no shadow ban and a new streak", f)
				}
			}},
		{"an admin unban of the credential clears the shadow ban",
			[]domain.Event{outcome(0, "a", "gpt", 400), shadowed(1, "s1", "a", "gpt", 0), unban(2, "a", "")},
			outcome(3, "a", "gpt", 400),
			func(t *testing.T, f domain.Facts, s *State) {
				if f.WouldBan || f.Counts[400] != 1 {
					t.Errorf("facts %+v: want the shadow ban and its counters gone", f)
				}
			}},
		{"ladder steps climb, never fall, and a success resets them",
			[]domain.Event{ladderCooldown(0, "a", "gpt", time.Second, 2), ladderCooldown(1, "a", "gpt", time.Second, 1)},
			outcome(2, "a", "gpt", 429),
			func(t *testing.T, f domain.Facts, s *State) {
				if f.LadderStep != 2 {
					t.Errorf("ladder step %d, want 2", f.LadderStep)
				}
				s = Apply(s, outcome(3, "a", "gpt", 200)) // unnumbered: folded after the rest
				if g := s.Facts(outcome(4, "a", "gpt", 429)); g.LadderStep != 0 {
					t.Errorf("ladder step %d after a success, want 0", g.LadderStep)
				}
			}},
		{"a credential-wide cooldown holds every model of the credential",
			[]domain.Event{outcome(0, "a", "gpt", 200), cooldown(1, "a", "*", m)},
			outcome(2, "a", "gpt", 401),
			func(t *testing.T, f domain.Facts, s *State) {
				if !f.CredCooldownUntil.Equal(at(1+m)) || !f.CooldownUntil.Equal(at(1+m)) {
					t.Errorf("facts %+v: want the credential's cooldown", f)
				}
				snap := s.Snapshot()
				for _, model := range []string{"gpt", "never-named"} {
					b, ok := snap.Blocked("a", model, at(2))
					if !ok || b.Reason != domain.BlockCoolingDown || !b.Until.Equal(at(1+m)) {
						t.Errorf("Blocked(a, %s) = %+v %v, want cooling down until %v", model, b, ok, at(1+m))
					}
				}
				if _, ok := snap.Blocked("b", "gpt", at(2)); ok {
					t.Error("another credential is blocked")
				}
				if v := snap.Pair(domain.Key{Credential: "a", Model: "gpt"}, at(2)); v.CooldownUntil == nil || !v.CooldownUntil.Equal(at(1+m)) {
					t.Errorf("pair view %+v: want the credential's cooldown", v)
				}
				if _, ok := snap.Blocked("a", "gpt", at(1+m)); ok {
					t.Error("still blocked at the cooldown's end")
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs := numbered(append(tt.evs, tt.probe)...)
			s := fold(evs)
			f := s.Facts(evs[len(evs)-1])
			tt.want(t, f, s)
			// A checkpoint holds all of it.
			back := roundTrip(t, fold(evs))
			sameState(t, "after a checkpoint", back, fold(evs))
		})
	}
}
