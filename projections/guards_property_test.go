package projections

import (
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/airouter/airouter/domain"
)

// TestEjectionCapProperty folds any outcomes, admin bans and lifts through
// the fold and domain.Decide under a cap below 100, with decisions folded
// at once, late (after other outcomes were folded and decided, in any
// order) or lost, and checks every automatic ban the fold imposes that
// takes a pair out of rotation: after it, at least one pair of its model is
// unbanned and at most the cap's share of them is banned.
func TestEjectionCapProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := domain.BanPolicy{
			Default:            domain.Rule{MaxAttempts: rapid.IntRange(1, 3).Draw(t, "max_attempts"), Permanent: rapid.Bool().Draw(t, "permanent"), Duration: time.Minute},
			Codes:              []int{500, 503},
			MaxEjectionPercent: rapid.IntRange(1, 99).Draw(t, "cap"),
		}
		creds := rapid.SampledFrom([]string{"a", "b", "c", "d"})
		models := rapid.SampledFrom([]string{"m1", "m2"})
		s := NewState()
		var seq uint64
		var pending []domain.Event
		when := t0
		fold := func(ev domain.Event) {
			seq++
			ev.Seq = seq
			var before int
			if ev.Kind == domain.KindBanImposed {
				_, before = s.modelBans(ev.Ban.Model, nanos(ev.At))
			}
			var ch Change
			s, ch = ApplyReport(s, ev)
			for _, c := range ch.Bans {
				if c.Kind == BanImposed && c.Ban.Origin == domain.OriginFail2Ban {
					checkShare(t, s, c.Ban.Model, p.MaxEjectionPercent, before, ev.At)
				}
			}
			if ev.Kind != domain.KindOutcomeRecorded {
				return
			}
			for _, d := range domain.Decide(p, ev, s.Facts(ev)) {
				switch rapid.IntRange(0, 3).Draw(t, "fate") {
				case 0:
					pending = append(pending, d) // in flight
				case 1: // lost
				default:
					pending = append([]domain.Event{d}, pending...)
				}
			}
		}
		for range rapid.IntRange(1, 120).Draw(t, "steps") {
			when = when.Add(time.Duration(rapid.IntRange(0, 20).Draw(t, "gap")) * time.Second)
			switch rapid.IntRange(0, 9).Draw(t, "what") {
			case 0:
				if len(pending) > 0 {
					i := rapid.IntRange(0, len(pending)-1).Draw(t, "which")
					d := pending[i]
					pending = append(pending[:i], pending[i+1:]...)
					fold(d)
				}
			case 1:
				b := &domain.Ban{Credential: creds.Draw(t, "cred"), Model: rapid.SampledFrom([]string{"m1", "m2", "*"}).Draw(t, "model"),
					Origin: domain.OriginAdmin, Since: when, Permanent: true}
				fold(domain.Event{V: 1, Kind: domain.KindBanImposed, ID: "admin/" + when.String(), At: when, Ban: b})
			case 2:
				fold(domain.Event{V: 1, Kind: domain.KindBanLifted, ID: "unban/" + when.String(), At: when,
					Unban: &domain.Unban{Credential: creds.Draw(t, "cred"), By: domain.LiftedByAdmin}})
			default:
				status := rapid.SampledFrom([]int{200, 500, 503}).Draw(t, "status")
				fold(domain.Event{V: 1, Kind: domain.KindOutcomeRecorded, At: when, Outcome: &domain.Outcome{
					Credential: creds.Draw(t, "cred"), Model: models.Draw(t, "model"), Status: status,
					Class: domain.ClassifyStatus(status), Attempt: 1}})
			}
		}
		for len(pending) > 0 {
			d := pending[0]
			pending = pending[1:]
			fold(d)
		}
	})
}

// checkShare fails when an automatic ban took one more pair of the model
// out of rotation (before were banned) and left none of them, or more than
// cap percent of them, banned. A ban on a pair already out (its
// credential banned whole) takes nothing more.
func checkShare(t *rapid.T, s *State, model string, cap, before int, at time.Time) {
	pairs, banned := s.modelBans(model, nanos(at))
	if banned > before && (banned >= pairs || banned*100 > cap*pairs) {
		t.Fatalf("an automatic ban left %d of %d pairs of %s banned (cap %d%%)", banned, pairs, model, cap)
	}
}
