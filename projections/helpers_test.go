package projections

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/airouter/airouter/domain"
)

// t0 is the moment the test logs start.
var t0 = time.Date(2026, 9, 21, 10, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func ptime(t time.Time) *time.Time { return &t }

// outcome is an attempt with an HTTP status, classified as the proxy would.
func outcome(d time.Duration, cred, model string, status int) domain.Event {
	return outcomeClass(d, cred, model, status, domain.ClassifyStatus(status))
}

func outcomeClass(d time.Duration, cred, model string, status int, class domain.Class) domain.Event {
	return domain.Event{
		V: domain.SchemaVersion, Kind: domain.KindOutcomeRecorded, At: at(d),
		Outcome: &domain.Outcome{Credential: cred, Model: model, Status: status, Class: class, Attempt: 1},
	}
}

// autoBan is a fail2ban ban of one pair for dur (permanent when dur is 0).
func autoBan(d time.Duration, id, cred, model string, code int, dur time.Duration) domain.Event {
	b := &domain.Ban{Credential: cred, Model: model, Origin: domain.OriginFail2Ban, ErrorCode: code, Since: at(d), Failures: 3}
	if dur == 0 {
		b.Permanent = true
	} else {
		b.Until = ptime(at(d + dur))
	}
	return domain.Event{V: domain.SchemaVersion, Kind: domain.KindBanImposed, ID: id, At: at(d), Ban: b}
}

// adminBan is a manual ban for dur (permanent when dur is 0).
func adminBan(d time.Duration, id, cred, model, reason string, dur time.Duration) domain.Event {
	ev := autoBan(d, id, cred, model, 0, dur)
	ev.Ban.Origin, ev.Ban.Reason, ev.Ban.Failures = domain.OriginAdmin, "admin: "+reason, 0
	return ev
}

func unban(d time.Duration, cred, model string) domain.Event {
	return domain.Event{V: domain.SchemaVersion, Kind: domain.KindBanLifted, ID: "unban-" + cred + "-" + model, At: at(d),
		Unban: &domain.Unban{Credential: cred, Model: model, By: domain.LiftedByAdmin}}
}

func expiry(d time.Duration, cred, model, banID string) domain.Event {
	return domain.Event{V: domain.SchemaVersion, Kind: domain.KindBanLifted, ID: ExpiryID(banID), At: at(d),
		Unban: &domain.Unban{Credential: cred, Model: model, By: domain.LiftedByExpiry, BanID: banID}}
}

func cooldown(d time.Duration, cred, model string, dur time.Duration) domain.Event {
	return domain.Event{V: domain.SchemaVersion, Kind: domain.KindCooldownStarted, At: at(d),
		Cooldown: &domain.Cooldown{Credential: cred, Model: model, Until: at(d + dur), Status: 429}}
}

func bench(d time.Duration, model string, dur time.Duration) domain.Event {
	return domain.Event{V: domain.SchemaVersion, Kind: domain.KindModelBenched, At: at(d),
		Bench: &domain.Bench{Model: model, Until: at(d + dur), Failures: 3, Credentials: []string{"a", "b"}, Reason: "3 failures in 15m"}}
}

func unbench(d time.Duration, model string) domain.Event {
	return domain.Event{V: domain.SchemaVersion, Kind: domain.KindModelUnbenched, ID: "unbench-" + model, At: at(d),
		Unbench: &domain.Unbench{Model: model, By: domain.LiftedByAdmin}}
}

func settings(d time.Duration, hops int) domain.Event {
	return domain.Event{V: domain.SchemaVersion, Kind: domain.KindFallbackSettingsChanged, At: at(d),
		Settings: &domain.FallbackSettings{MaxHops: hops, TimeBudget: domain.Duration(45 * time.Second)}}
}

// numbered gives the events the log positions 1..n, as reading them back
// from the log does.
func numbered(evs ...domain.Event) []domain.Event {
	out := make([]domain.Event, len(evs))
	for i, ev := range evs {
		ev.Seq = uint64(i + 1)
		out[i] = ev
	}
	return out
}

func fold(evs []domain.Event) *State {
	s := NewState()
	for _, ev := range evs {
		s = Apply(s, ev)
	}
	return s
}

// fataler is what both *testing.T and *rapid.T offer.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

func viewJSON(t fataler, s *Snapshot, now time.Time) []byte {
	t.Helper()
	b, err := json.MarshalIndent(s.StateView(now), "", "  ")
	if err != nil {
		t.Fatalf("marshal view: %v", err)
	}
	return append(b, '\n')
}

func counts(s *State, cred, model string) map[int]int {
	c := s.creds[cred]
	if c == nil || c.pairs[model] == nil {
		return nil
	}
	return c.pairs[model].counts
}

func sameCounts(got, want map[int]int) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// sameState fails with what when a and b do not hold the same state, as
// their checkpoints show it.
func sameState(t interface {
	Helper()
	Fatal(...any)
	Fatalf(string, ...any)
}, what string, a, b *State) {
	t.Helper()
	ca, err := a.MarshalCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	cb, err := b.MarshalCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ca, cb) {
		t.Fatalf("%s:\n%s\n%s", what, ca, cb)
	}
}
