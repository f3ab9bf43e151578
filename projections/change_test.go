package projections

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/airouter/airouter/domain"
)

// changeLine renders a Change as "kind id cred/model by" entries.
func changeLine(ch Change) string {
	var parts []string
	for _, c := range ch.Bans {
		s := fmt.Sprintf("%s %s %s/%s", c.Kind, c.ID, c.Ban.Credential, c.Ban.Model)
		if c.By != "" {
			s += " by " + string(c.By)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

func TestApplyReport(t *testing.T) {
	tests := []struct {
		name   string
		before []domain.Event
		ev     domain.Event
		want   string
	}{
		{"an outcome that changes no ban reports nothing", []domain.Event{
			outcome(0, "a", "gpt", 429),
		}, outcome(m, "a", "gpt", 500), ""},
		{"a ban on a free pair is imposed", nil,
			autoBan(0, "b1", "a", "gpt", 429, 5*m), "imposed b1 a/gpt"},
		{"a ban without a model is imposed on the wildcard", nil,
			adminBan(0, "w1", "a", "", "drain", 0), "imposed w1 a/*"},
		{"the same ban again changes nothing", []domain.Event{
			autoBan(0, "b1", "a", "gpt", 429, 5*m),
		}, autoBan(m, "b1", "a", "gpt", 429, 5*m), ""},
		{"an automatic ban leaves an active manual ban", []domain.Event{
			adminBan(0, "x", "a", "gpt", "why", 10*m),
		}, autoBan(m, "b1", "a", "gpt", 429, 5*m), ""},
		{"an automatic ban replaces an ended manual ban, which expires", []domain.Event{
			adminBan(0, "x", "a", "gpt", "why", 10*m),
		}, autoBan(10*m, "b1", "a", "gpt", 429, 5*m), "expired x a/gpt, imposed b1 a/gpt"},
		{"a manual ban replaces an active automatic ban", []domain.Event{
			autoBan(0, "b1", "a", "gpt", 429, 5*m),
		}, adminBan(m, "x", "a", "gpt", "why", 0), "replaced b1 a/gpt, imposed x a/gpt"},
		{"a new automatic ban replaces an active automatic ban", []domain.Event{
			autoBan(0, "b1", "a", "*", 401, 5*m),
		}, autoBan(m, "b2", "a", "*", 403, 5*m), "replaced b1 a/*, imposed b2 a/*"},
		{"an admin unban lifts every active ban of the credential, ordered by model", []domain.Event{
			autoBan(0, "b1", "a", "llama", 429, 5*m), autoBan(0, "b2", "a", "gpt", 429, 0),
			adminBan(0, "w1", "a", "*", "drain", 10*m), autoBan(0, "b3", "b", "gpt", 429, 0),
		}, unban(m, "a", ""), "lifted w1 a/* by admin, lifted b2 a/gpt by admin, lifted b1 a/llama by admin"},
		{"an admin unban finds an ended ban expired", []domain.Event{
			autoBan(0, "b1", "a", "llama", 429, 5*m), autoBan(0, "b2", "a", "gpt", 429, 0),
		}, unban(5*m, "a", ""), "lifted b2 a/gpt by admin, expired b1 a/llama by admin"},
		{"an admin unban of one model lifts only that key", []domain.Event{
			autoBan(0, "b1", "a", "llama", 429, 5*m), autoBan(0, "b2", "a", "gpt", 429, 0),
			adminBan(0, "w1", "a", "*", "drain", 10*m),
		}, unban(m, "a", "gpt"), "lifted b2 a/gpt by admin"},
		{"an admin unban of * lifts only the wildcard", []domain.Event{
			autoBan(0, "b2", "a", "gpt", 429, 0), adminBan(0, "w1", "a", "*", "drain", 10*m),
		}, unban(m, "a", "*"), "lifted w1 a/* by admin"},
		{"an admin unban of what is not banned reports nothing", []domain.Event{
			outcome(0, "a", "gpt", 429),
		}, unban(m, "a", ""), ""},
		{"an expiry naming the ban expires it", []domain.Event{
			autoBan(0, "b1", "a", "gpt", 429, 5*m),
		}, expiry(5*m, "a", "gpt", "b1"), "expired b1 a/gpt by expiry"},
		{"an expiry naming another ban reports nothing", []domain.Event{
			autoBan(0, "b1", "a", "gpt", 429, 5*m), autoBan(m, "b2", "a", "gpt", 429, 50*m),
		}, expiry(6*m, "a", "gpt", "b1"), ""},
		{"an outcome expires its pair's ended ban and the credential's ended wildcard", []domain.Event{
			autoBan(0, "b1", "a", "gpt", 429, 5*m), adminBan(0, "w1", "a", "*", "drain", 2*m),
			autoBan(0, "b2", "a", "llama", 429, 5*m),
		}, outcome(5*m, "a", "gpt", 500), "expired w1 a/*, expired b1 a/gpt"},
		{"an outcome on an actively banned pair reports nothing", []domain.Event{
			autoBan(0, "b1", "a", "gpt", 429, 5*m),
		}, outcome(m, "a", "gpt", 500), ""},
		{"an invalid event reports nothing", []domain.Event{
			autoBan(0, "b1", "a", "gpt", 429, 5*m),
		}, domain.Event{V: domain.SchemaVersion, Kind: domain.KindBanLifted, At: at(m),
			Unban: &domain.Unban{Credential: "a", By: "someone"}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			evs := numbered(append(append([]domain.Event{}, tc.before...), tc.ev)...)
			s := fold(evs[:len(evs)-1])
			_, ch := ApplyReport(s, evs[len(evs)-1])
			if got := changeLine(ch); got != tc.want {
				t.Fatalf("change = %q\nwant     %q", got, tc.want)
			}
			if tc.want == "" && ch.Bans != nil {
				t.Fatalf("an event that changes no ban reports a non-nil list: %#v", ch.Bans)
			}
		})
	}
}

func TestApplyReportCarriesTheBan(t *testing.T) {
	ev := autoBan(0, "b1", "a", "gpt", 429, 5*m)
	ev.Ban.Since = ev.Ban.Since.In(time.FixedZone("east", 3600))
	s, ch := ApplyReport(nil, numbered(ev)[0])
	if len(ch.Bans) != 1 {
		t.Fatalf("change %s", changeLine(ch))
	}
	got := ch.Bans[0]
	if got.Key() != (domain.Key{Credential: "a", Model: "gpt"}) || got.Ban.Origin != domain.OriginFail2Ban ||
		got.Ban.ErrorCode != 429 || got.Ban.Failures != 3 || !got.Ban.Since.Equal(at(0)) || got.Ban.Since.Location() != time.UTC || !got.Ban.Until.Equal(at(5*m)) {
		t.Fatalf("imposed ban %+v", got.Ban)
	}
	// The report is the caller's: writing to it leaves the state alone.
	*got.Ban.Until = at(time.Hour)
	if b := s.Snapshot().Bans(at(m)); len(b) != 1 || !b[0].Until.Equal(at(5*m)) {
		t.Fatalf("the state's ban changed with the report: %+v", b)
	}
}

func TestApplyReportIsFreeWhenNoBanChanges(t *testing.T) {
	s := fold(numbered(outcome(0, "a", "gpt", 429), autoBan(0, "b1", "b", "gpt", 429, 0)))
	evs := []domain.Event{outcome(m, "a", "gpt", 429), outcome(m, "b", "gpt", 500), outcome(m, "a", "gpt", 200)}
	allocs := testing.AllocsPerRun(200, func() {
		for _, ev := range evs {
			var ch Change
			s, ch = ApplyReport(s, ev) // Seq 0: folded every time
			if ch.Bans != nil {
				t.Fatal("a ban changed")
			}
		}
	})
	if allocs != 0 {
		t.Fatalf("ApplyReport allocates %v times for outcomes that change no ban", allocs)
	}
}

// storedBans are the ban records of a state by key, ended ones included.
func storedBans(s *State) map[domain.Key]*banRec {
	out := map[domain.Key]*banRec{}
	for name, c := range s.creds {
		if c.wild != nil {
			out[domain.Key{Credential: name, Model: domain.AllModels}] = c.wild
		}
		for model, p := range c.pairs {
			if p.ban != nil {
				out[domain.Key{Credential: name, Model: model}] = p.ban
			}
		}
	}
	return out
}

// TestPropertyReportIsTheBanTableDiff checks, for any log, that ApplyReport
// folds as Apply does and that its report is exactly how the ban table
// changed: each removed record once, as replaced, lifted or expired by the
// rules of Change, each new record once as imposed, nothing else; and that
// an admin unban lifts as many bans as the snapshot before it shows active
// (what /api/unban answers as removed).
func TestPropertyReportIsTheBanTableDiff(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		evs := genLog(t)
		plain, s := NewState(), NewState()
		for i, ev := range evs {
			before := storedBans(s)
			active := 0
			fresh := ev.Seq == 0 || s.Pos().Before(ev.Pos()) // not a re-delivery
			if u := ev.Unban; fresh && ev.Kind == domain.KindBanLifted && u != nil && u.By == domain.LiftedByAdmin {
				for _, b := range s.Snapshot().Bans(ev.At) {
					if b.Credential == u.Credential && (u.Model == "" || u.Model == b.Model) {
						active++
					}
				}
			}
			var ch Change
			s, ch = ApplyReport(s, ev)
			plain = Apply(plain, ev)
			after := storedBans(s)
			checkDiff(t, i, ev, before, after, ch)
			lifted := 0
			for _, c := range ch.Bans {
				if c.Kind == BanLifted {
					lifted++
				}
			}
			if lifted != active {
				t.Fatalf("event %d (%s): lifted %d bans, the snapshot before showed %d active", i, ev.Kind, lifted, active)
			}
		}
		sameState(t, "ApplyReport and Apply fold differently", plain, s)
	})
}

func checkDiff(t *rapid.T, i int, ev domain.Event, before, after map[domain.Key]*banRec, ch Change) {
	t.Helper()
	now := nanos(ev.At)
	removed, imposed := map[domain.Key]bool{}, map[domain.Key]bool{}
	for j, c := range ch.Bans {
		k := c.Key()
		switch c.Kind {
		case BanImposed:
			if r := after[k]; r == nil || r.id != c.ID || imposed[k] {
				t.Fatalf("event %d: imposed %s on %v, the state holds %v", i, c.ID, k, r)
			}
			imposed[k] = true
			continue
		case BanReplaced:
			if !before[k].activeAt(now) || j+1 >= len(ch.Bans) || ch.Bans[j+1].Kind != BanImposed || ch.Bans[j+1].Key() != k {
				t.Fatalf("event %d: replaced %s on %v: %s", i, c.ID, k, changeLine(ch))
			}
		case BanLifted:
			if ev.Kind != domain.KindBanLifted || c.By != domain.LiftedByAdmin || !before[k].activeAt(now) {
				t.Fatalf("event %d: lifted %s on %v: %s", i, c.ID, k, changeLine(ch))
			}
		case BanExpired:
			if c.By != domain.LiftedByExpiry && before[k].activeAt(now) {
				t.Fatalf("event %d: expired %s on %v, still active: %s", i, c.ID, k, changeLine(ch))
			}
		default:
			t.Fatalf("event %d: kind %q", i, c.Kind)
		}
		if r := before[k]; r == nil || r.id != c.ID || removed[k] {
			t.Fatalf("event %d: removed %s from %v, the state held %v", i, c.ID, k, r)
		}
		removed[k] = true
	}
	for k, b := range before {
		if after[k] != b && !removed[k] {
			t.Fatalf("event %d (%s): ban %s on %v went unreported: %s", i, ev.Kind, b.id, k, changeLine(ch))
		}
	}
	for k, b := range after {
		if before[k] != b && !imposed[k] {
			t.Fatalf("event %d (%s): ban %s on %v came unreported: %s", i, ev.Kind, b.id, k, changeLine(ch))
		}
	}
}

// BenchmarkApplyReport folds a realistic log with Apply and with
// ApplyReport: the report must cost nothing when no ban changes.
func BenchmarkApplyReport(b *testing.B) {
	evs := realisticLog(200_000)
	b.Run("Apply", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s := NewState()
			for _, ev := range evs {
				s = Apply(s, ev)
			}
		}
	})
	b.Run("ApplyReport", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s := NewState()
			for _, ev := range evs {
				s, _ = ApplyReport(s, ev)
			}
		}
	})
}
