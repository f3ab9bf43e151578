package projections

import (
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

const m = time.Minute

func TestApplyOutcomeCounters(t *testing.T) {
	tests := []struct {
		name   string
		events []domain.Event
		cred   string
		model  string
		want   map[int]int
	}{
		{"every non-2xx code counts, per code", []domain.Event{
			outcome(0, "a", "gpt", 429), outcome(m, "a", "gpt", 429), outcome(2*m, "a", "gpt", 500),
			outcome(3*m, "a", "gpt", 400),
		}, "a", "gpt", map[int]int{429: 2, 500: 1, 400: 1}},
		{"pairs count apart", []domain.Event{
			outcome(0, "a", "gpt", 429), outcome(m, "a", "llama", 429), outcome(2*m, "b", "gpt", 429),
		}, "a", "gpt", map[int]int{429: 1}},
		{"a success resets every counter of the pair", []domain.Event{
			outcome(0, "a", "gpt", 429), outcome(m, "a", "gpt", 500), outcome(2*m, "a", "gpt", 200),
		}, "a", "gpt", map[int]int{}},
		{"a success on another pair resets nothing here", []domain.Event{
			outcome(0, "a", "gpt", 429), outcome(m, "b", "gpt", 200), outcome(m, "a", "llama", 200),
		}, "a", "gpt", map[int]int{429: 1}},
		{"an empty completion neither counts nor resets", []domain.Event{
			outcome(0, "a", "gpt", 429), outcomeClass(m, "a", "gpt", 200, domain.ClassEmptyCompletion),
		}, "a", "gpt", map[int]int{429: 1}},
		{"a canceled attempt counts nothing", []domain.Event{
			outcomeClass(0, "a", "gpt", 0, domain.ClassCanceled), outcomeClass(m, "a", "gpt", 500, domain.ClassCanceled),
		}, "a", "gpt", map[int]int{}},
		{"a timeout counts 408, a transport failure 502", []domain.Event{
			outcomeClass(0, "a", "gpt", 0, domain.ClassTimeout), outcomeClass(m, "a", "gpt", 0, domain.ClassConnection),
			outcomeClass(2*m, "a", "gpt", 0, domain.ClassConnection),
		}, "a", "gpt", map[int]int{408: 1, 502: 2}},
		{"outcomes on a banned pair change nothing", []domain.Event{
			outcome(0, "a", "gpt", 429), autoBan(m, "b1", "a", "gpt", 429, 5*m),
			outcome(2*m, "a", "gpt", 429), outcome(3*m, "a", "gpt", 200),
		}, "a", "gpt", map[int]int{429: 1}},
		{"a wildcard ban covers every model, even unseen ones", []domain.Event{
			adminBan(0, "w1", "a", "*", "drain", 10*m), outcome(m, "a", "new-model", 500),
		}, "a", "new-model", map[int]int{}},
		{"an ended ban is dropped with its counters before the outcome counts", []domain.Event{
			outcome(0, "a", "gpt", 429), autoBan(m, "b1", "a", "gpt", 429, 5*m),
			outcome(6*m, "a", "gpt", 500),
		}, "a", "gpt", map[int]int{500: 1}},
		{"a ban ends exactly at its until", []domain.Event{
			outcome(0, "a", "gpt", 429), autoBan(m, "b1", "a", "gpt", 429, 5*m),
			outcome(6*m-1, "a", "gpt", 500), outcome(6*m, "a", "gpt", 503),
		}, "a", "gpt", map[int]int{503: 1}},
		{"an ended wildcard ban resets every pair of the credential", []domain.Event{
			outcome(0, "a", "llama", 429), adminBan(m, "w1", "a", "*", "drain", 5*m),
			outcome(7*m, "a", "gpt", 500),
		}, "a", "llama", map[int]int{}},
		{"a permanent ban never ends", []domain.Event{
			outcome(0, "a", "gpt", 401), autoBan(m, "b1", "a", "gpt", 401, 0),
			outcome(1000*time.Hour, "a", "gpt", 500),
		}, "a", "gpt", map[int]int{401: 1}},
		{"imposing a ban leaves counters alone", []domain.Event{
			outcome(0, "a", "gpt", 429), outcome(0, "a", "gpt", 429), adminBan(m, "x", "a", "gpt", "why", 0),
		}, "a", "gpt", map[int]int{429: 2}},
		{"lifting an exact ban resets that pair", []domain.Event{
			outcome(0, "a", "gpt", 429), outcome(0, "a", "llama", 429), autoBan(m, "b1", "a", "gpt", 429, 5*m),
			unban(2*m, "a", "gpt"),
		}, "a", "gpt", map[int]int{}},
		{"lifting an exact ban leaves other pairs' counters", []domain.Event{
			outcome(0, "a", "gpt", 429), outcome(0, "a", "llama", 429), autoBan(m, "b1", "a", "gpt", 429, 5*m),
			unban(2*m, "a", "gpt"),
		}, "a", "llama", map[int]int{429: 1}},
		{"lifting the wildcard resets every pair of the credential", []domain.Event{
			outcome(0, "a", "llama", 429), adminBan(m, "w1", "a", "*", "drain", 0), unban(2*m, "a", "*"),
		}, "a", "llama", map[int]int{}},
		{"unbanning what is not banned resets nothing", []domain.Event{
			outcome(0, "a", "gpt", 429), unban(m, "a", "gpt"), unban(m, "a", ""),
		}, "a", "gpt", map[int]int{429: 1}},
		{"an expiry naming another ban lifts nothing", []domain.Event{
			outcome(0, "a", "gpt", 429), autoBan(m, "b1", "a", "gpt", 429, 5*m), autoBan(2*m, "b2", "a", "gpt", 429, 50*m),
			expiry(6*m, "a", "gpt", "b1"), outcome(7*m, "a", "gpt", 500),
		}, "a", "gpt", map[int]int{429: 1}},
		{"an expiry naming the ban lifts it and resets", []domain.Event{
			outcome(0, "a", "gpt", 429), autoBan(m, "b1", "a", "gpt", 429, 5*m),
			expiry(6*m, "a", "gpt", "b1"), outcome(7*m, "a", "gpt", 500),
		}, "a", "gpt", map[int]int{500: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := fold(numbered(tc.events...))
			if got := counts(s, tc.cred, tc.model); !sameCounts(got, tc.want) {
				t.Fatalf("counts of %s/%s = %v, want %v", tc.cred, tc.model, got, tc.want)
			}
		})
	}
}

func TestApplyBenchWindow(t *testing.T) {
	tests := []struct {
		name   string
		events []domain.Event
		want   []string // credentials in the window of model "gpt", oldest first
	}{
		{"5xx, timeouts, connection errors and model-not-found count", []domain.Event{
			outcome(0, "a", "gpt", 500), outcomeClass(m, "b", "gpt", 0, domain.ClassTimeout),
			outcomeClass(2*m, "c", "gpt", 0, domain.ClassConnection), outcomeClass(3*m, "d", "gpt", 404, domain.ClassModelNotFound),
		}, []string{"a", "b", "c", "d"}},
		{"auth, rate limits, client errors and empty completions do not", []domain.Event{
			outcome(0, "a", "gpt", 401), outcome(m, "a", "gpt", 429), outcome(m, "a", "gpt", 400),
			outcomeClass(2*m, "a", "gpt", 200, domain.ClassEmptyCompletion),
		}, nil},
		{"a success on any credential clears the window", []domain.Event{
			outcome(0, "a", "gpt", 500), outcome(m, "b", "gpt", 502), outcome(2*m, "c", "gpt", 200),
			outcome(3*m, "a", "gpt", 503),
		}, []string{"a"}},
		{"a success on another model keeps it", []domain.Event{
			outcome(0, "a", "gpt", 500), outcome(m, "a", "llama", 200),
		}, []string{"a"}},
		{"a failure on a banned pair is not counted", []domain.Event{
			autoBan(0, "b1", "a", "gpt", 500, 5*m), outcome(m, "a", "gpt", 500), outcome(m, "b", "gpt", 500),
		}, []string{"b"}},
		{"benching clears the window", []domain.Event{
			outcome(0, "a", "gpt", 500), outcome(m, "b", "gpt", 500), bench(2*m, "gpt", 10*m), outcome(3*m, "c", "gpt", 500),
		}, []string{"c"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			evs := numbered(tc.events...)
			s := fold(evs)
			var got []string
			if m := s.models["gpt"]; m != nil {
				for _, f := range m.window {
					got = append(got, f.Credential)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("window = %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("window = %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestApplyBenchWindowIsBounded(t *testing.T) {
	var evs []domain.Event
	for i := 0; i < windowSize+10; i++ {
		evs = append(evs, outcome(time.Duration(i)*time.Second, "a", "gpt", 500))
	}
	s := fold(numbered(evs...))
	w := s.models["gpt"].window
	if len(w) != windowSize {
		t.Fatalf("window holds %d failures, want %d", len(w), windowSize)
	}
	if w[0].Seq != 11 || w[len(w)-1].Seq != uint64(windowSize+10) {
		t.Fatalf("window spans seq %d..%d, want 11..%d", w[0].Seq, w[len(w)-1].Seq, windowSize+10)
	}
	if !w[0].At.Equal(at(10 * time.Second)) {
		t.Fatalf("oldest failure at %v, want %v", w[0].At, at(10*time.Second))
	}
}

func TestApplyBans(t *testing.T) {
	type want struct {
		model  string // key's model; "*" for the wildcard
		id     string // "" for no ban
		origin domain.Origin
	}
	tests := []struct {
		name   string
		events []domain.Event
		want   []want // for credential "a"
	}{
		{"a manual ban replaces a longer automatic one", []domain.Event{
			autoBan(0, "auto", "a", "gpt", 401, 0), adminBan(m, "man", "a", "gpt", "short", 5*m),
		}, []want{{"gpt", "man", domain.OriginAdmin}}},
		{"a manual ban replaces a manual one", []domain.Event{
			adminBan(0, "man1", "a", "gpt", "x", 0), adminBan(m, "man2", "a", "gpt", "y", 5*m),
		}, []want{{"gpt", "man2", domain.OriginAdmin}}},
		{"an automatic ban never replaces an active manual one", []domain.Event{
			adminBan(0, "man", "a", "gpt", "x", 5*m), autoBan(m, "auto", "a", "gpt", 429, 50*m),
		}, []want{{"gpt", "man", domain.OriginAdmin}}},
		{"nor a permanent manual one", []domain.Event{
			adminBan(0, "man", "a", "gpt", "x", 0), autoBan(1000*time.Hour, "auto", "a", "gpt", 429, 0),
		}, []want{{"gpt", "man", domain.OriginAdmin}}},
		{"nor a manual wildcard ban", []domain.Event{
			adminBan(0, "w", "a", "*", "drain", 5*m), autoBan(m, "auto", "a", "*", 429, 50*m),
		}, []want{{"*", "w", domain.OriginAdmin}}},
		{"an automatic ban replaces a manual one that has ended", []domain.Event{
			adminBan(0, "man", "a", "gpt", "x", 5*m), autoBan(5*m, "auto", "a", "gpt", 429, 50*m),
		}, []want{{"gpt", "auto", domain.OriginFail2Ban}}},
		{"an automatic ban replaces another automatic one", []domain.Event{
			autoBan(0, "b1", "a", "gpt", 429, 50*m), autoBan(m, "b2", "a", "gpt", 500, 5*m),
		}, []want{{"gpt", "b2", domain.OriginFail2Ban}}},
		{"a manual ban on the wildcard leaves an automatic exact ban to come", []domain.Event{
			adminBan(0, "w", "a", "*", "drain", 0), autoBan(m, "b1", "a", "gpt", 429, 5*m),
		}, []want{{"*", "w", domain.OriginAdmin}, {"gpt", "b1", domain.OriginFail2Ban}}},
		{"the same ban twice is ignored", []domain.Event{
			autoBan(0, "b1", "a", "gpt", 429, 5*m), autoBan(m, "b1", "a", "gpt", 429, 50*m),
		}, []want{{"gpt", "b1", domain.OriginFail2Ban}}},
		{"a ban without a model covers the credential", []domain.Event{
			adminBan(0, "w", "a", "", "drain", 0),
		}, []want{{"*", "w", domain.OriginAdmin}}},
		{"a wildcard and exact bans live side by side", []domain.Event{
			adminBan(0, "w", "a", "*", "drain", 0), autoBan(m, "b1", "a", "gpt", 429, 5*m),
		}, []want{{"*", "w", domain.OriginAdmin}, {"gpt", "b1", domain.OriginFail2Ban}}},
		{"unban without a model lifts all", []domain.Event{
			adminBan(0, "w", "a", "*", "drain", 0), autoBan(m, "b1", "a", "gpt", 429, 5*m),
			autoBan(m, "b2", "a", "llama", 429, 5*m), autoBan(m, "b3", "b", "gpt", 429, 5*m), unban(2*m, "a", ""),
		}, []want{{"*", "", ""}, {"gpt", "", ""}, {"llama", "", ""}}},
		{"unban of a model lifts only that key", []domain.Event{
			adminBan(0, "w", "a", "*", "drain", 0), autoBan(m, "b1", "a", "gpt", 429, 5*m),
			autoBan(m, "b2", "a", "llama", 429, 5*m), unban(2*m, "a", "gpt"),
		}, []want{{"*", "w", domain.OriginAdmin}, {"gpt", "", ""}, {"llama", "b2", domain.OriginFail2Ban}}},
		{"unban of * lifts only the wildcard", []domain.Event{
			adminBan(0, "w", "a", "*", "drain", 0), autoBan(m, "b1", "a", "gpt", 429, 5*m), unban(2*m, "a", "*"),
		}, []want{{"*", "", ""}, {"gpt", "b1", domain.OriginFail2Ban}}},
		{"a late expiry never lifts a newer ban", []domain.Event{
			autoBan(0, "b1", "a", "gpt", 429, 5*m), adminBan(m, "b2", "a", "gpt", "x", 0), expiry(6*m, "a", "gpt", "b1"),
		}, []want{{"gpt", "b2", domain.OriginAdmin}}},
		{"an expiry without a model finds its ban", []domain.Event{
			adminBan(0, "w", "a", "*", "x", 5*m), autoBan(0, "b1", "a", "gpt", 429, 5*m), expiry(6*m, "a", "", "w"),
		}, []want{{"*", "", ""}, {"gpt", "b1", domain.OriginFail2Ban}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := fold(numbered(tc.events...))
			c := s.creds["a"]
			for _, w := range tc.want {
				var b *banRec
				if w.model == domain.AllModels {
					b = c.wild
				} else if p := c.pairs[w.model]; p != nil {
					b = p.ban
				}
				switch {
				case w.id == "" && b != nil:
					t.Errorf("a/%s: ban %q, want none", w.model, b.id)
				case w.id != "" && b == nil:
					t.Errorf("a/%s: no ban, want %q", w.model, w.id)
				case w.id != "" && (b.id != w.id || b.ban.Origin != w.origin):
					t.Errorf("a/%s: ban %q by %s, want %q by %s", w.model, b.id, b.ban.Origin, w.id, w.origin)
				}
			}
		})
	}
}

// TestApplyStreak checks the log position that names a pair's failure
// streak, as Facts reports it after each outcome of pair a/gpt.
func TestApplyStreak(t *testing.T) {
	tests := []struct {
		name   string
		events []domain.Event
		want   uint64
	}{
		{"the first failure starts the streak", []domain.Event{
			outcome(0, "a", "gpt", 429),
		}, 1},
		{"later failures, of any code, keep it", []domain.Event{
			outcome(0, "a", "gpt", 429), outcome(0, "b", "gpt", 500), outcome(m, "a", "gpt", 500),
			outcome(2*m, "a", "gpt", 429),
		}, 1},
		{"a success ends it; the next failure starts another", []domain.Event{
			outcome(0, "a", "gpt", 429), outcome(m, "a", "gpt", 200), outcome(2*m, "a", "gpt", 429),
		}, 3},
		{"no streak after a success", []domain.Event{
			outcome(0, "a", "gpt", 429), outcome(m, "a", "gpt", 200),
		}, 0},
		{"an unwatched or canceled outcome does not end it", []domain.Event{
			outcome(0, "a", "gpt", 429), outcome(m, "a", "gpt", 404), outcomeClass(m, "a", "gpt", 0, domain.ClassCanceled),
		}, 1},
		{"a manual ban leaves it; its lift ends it", []domain.Event{
			outcome(0, "a", "gpt", 429), adminBan(m, "x", "a", "gpt", "why", 0), outcome(2*m, "a", "gpt", 500),
			unban(3*m, "a", "gpt"), outcome(4*m, "a", "gpt", 500),
		}, 5},
		{"a ban's expiry ends it", []domain.Event{
			outcome(0, "a", "gpt", 429), autoBan(m, "b1", "a", "gpt", 429, 5*m), expiry(6*m, "a", "gpt", "b1"),
			outcome(7*m, "a", "gpt", 429),
		}, 4},
		{"an ended ban dropped by the next outcome ends it", []domain.Event{
			outcome(0, "a", "gpt", 429), autoBan(m, "b1", "a", "gpt", 429, 5*m), outcome(7*m, "a", "gpt", 429),
		}, 3},
		{"lifting the wildcard ends it", []domain.Event{
			outcome(0, "a", "gpt", 429), adminBan(m, "w", "a", "*", "drain", 0), unban(2*m, "a", "*"),
			outcome(3*m, "a", "gpt", 429),
		}, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			evs := numbered(tc.events...)
			s := fold(evs)
			probe := outcome(time.Hour, "a", "gpt", 404)
			probe.Seq = uint64(len(evs) + 1)
			if tc.want == 0 {
				if got := s.Facts(probe).Streak; !got.IsZero() {
					t.Fatalf("streak %v, want none", got)
				}
				return
			}
			// Judge it through Facts after one more failure of the pair,
			// which must not move it.
			s = Apply(s, probe)
			if got := s.Facts(probe).Streak; got != (domain.Pos{Seq: tc.want}) {
				t.Fatalf("streak %v, want %d", got, tc.want)
			}
		})
	}
}

func TestApplyBanIsIdempotentInContent(t *testing.T) {
	s := fold(numbered(autoBan(0, "b1", "a", "gpt", 429, 5*m), autoBan(m, "b1", "a", "gpt", 429, 50*m)))
	if u := s.creds["a"].pairs["gpt"].ban.ban.Until; !u.Equal(at(5 * m)) {
		t.Fatalf("ban until %v, want the first event's %v", u, at(5*m))
	}
}

func TestApplyCooldownAndBench(t *testing.T) {
	s := fold(numbered(
		cooldown(0, "a", "gpt", 10*m), cooldown(m, "a", "gpt", 2*m), // shorter: ignored
		cooldown(0, "a", "llama", 2*m), cooldown(m, "a", "llama", 5*m), // longer: wins
		bench(0, "gpt", 10*m), bench(m, "gpt", m), bench(0, "llama", m), bench(m, "llama", 20*m),
	))
	checks := []struct {
		name string
		got  time.Time
		want time.Time
	}{
		{"cooldown a/gpt", s.creds["a"].pairs["gpt"].cooldown.cd.Until, at(10 * m)},
		{"cooldown a/llama", s.creds["a"].pairs["llama"].cooldown.cd.Until, at(6 * m)},
		{"bench gpt", s.models["gpt"].bench.bench.Until, at(10 * m)},
		{"bench llama", s.models["llama"].bench.bench.Until, at(21 * m)},
	}
	for _, c := range checks {
		if !c.got.Equal(c.want) {
			t.Errorf("%s until %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestApplySettings(t *testing.T) {
	s := fold(numbered(settings(0, 3), settings(m, 7)))
	got, ok := s.Snapshot().Settings()
	if !ok || got.MaxHops != 7 || got.TimeBudget != domain.Duration(45*time.Second) {
		t.Fatalf("settings = %+v, %v; want max_hops 7", got, ok)
	}
	if _, ok := NewState().Snapshot().Settings(); ok {
		t.Fatal("a fresh state reports runtime settings")
	}
}

// An unbench lifts the model's bench whatever its end, and forgets the
// model's failures, so the model is routed at once and only later failures
// count; other models' benches stay, and an unbench of a model never
// benched changes nothing.
func TestApplyUnbench(t *testing.T) {
	s := fold(numbered(
		outcome(0, "a", "gpt", 500), outcome(0, "b", "gpt", 502),
		bench(0, "gpt", 10*m), bench(0, "llama", 10*m),
		outcome(m, "a", "gpt", 500), // benched: still counted in the window
		unbench(2*m, "gpt"), unbench(2*m, "qwen"),
	))
	if b := s.models["gpt"].bench; b != nil {
		t.Errorf("gpt still benched until %v", b.bench.Until)
	}
	if w := s.models["gpt"].window; len(w) != 0 {
		t.Errorf("gpt's window after the unbench = %+v, want empty", w)
	}
	if b := s.models["llama"].bench; b == nil || !b.bench.Until.Equal(at(10*m)) {
		t.Errorf("llama's bench = %+v, want it kept", b)
	}
	if s.models["qwen"] != nil || s.Skipped() != (Skipped{}) {
		t.Errorf("an unbench of a model never benched: models %v, skipped %+v", s.models["qwen"], s.Skipped())
	}
	snap := s.Snapshot()
	if _, blocked := snap.Blocked("a", "gpt", at(2*m)); blocked {
		t.Error("gpt blocked after the unbench")
	}
	if _, blocked := snap.Blocked("a", "llama", at(2*m)); !blocked {
		t.Error("llama not blocked: its bench was lifted too")
	}
}
