package domain

import (
	"testing"
	"time"
)

func TestCapWithholds(t *testing.T) {
	tests := []struct {
		cap, banned, pairs int
		want               bool
	}{
		{100, 1, 2, false}, {0, 1, 2, false}, // no cap
		{50, 0, 2, false}, {50, 1, 2, true}, // half of two, not both
		{50, 0, 1, true},                      // a model's only pair stays
		{99, 8, 10, false}, {99, 9, 10, true}, // never the last one
		{34, 0, 3, false}, {34, 1, 3, true},
		{50, 2, 4, true}, {60, 2, 5, false}, {60, 3, 5, true},
	}
	for _, tt := range tests {
		if got := CapWithholds(tt.cap, tt.banned, tt.pairs); got != tt.want {
			t.Errorf("CapWithholds(%d, %d of %d) = %v, want %v", tt.cap, tt.banned, tt.pairs, got, tt.want)
		}
	}
}

func TestLadderStep(t *testing.T) {
	c := CooldownPolicy{RateLimitBase: time.Second, RateLimitMax: 5 * time.Second}
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 5 * time.Second, 60: 5 * time.Second} {
		if got := c.LadderStep(n); got != want {
			t.Errorf("LadderStep(%d) = %s, want %s", n, got, want)
		}
	}
}

func TestShadowedFollowsTheRuleThatApplies(t *testing.T) {
	p := BanPolicy{
		Rules: map[int]Rule{400: {MaxAttempts: 1, Shadow: true}, 500: {MaxAttempts: 1}},
		Credentials: map[string]CredentialRules{
			"strict": {Rules: map[int]Rule{400: {MaxAttempts: 1}}},
			"watch":  {Shadow: true},
		},
	}
	for _, tt := range []struct {
		cred string
		code int
		want bool
	}{{"any", 400, true}, {"any", 500, false}, {"any", 503, false}, {"strict", 400, false}, {"watch", 500, true}, {"watch", 503, true}} {
		if got := p.Shadowed(tt.cred, tt.code); got != tt.want {
			t.Errorf("Shadowed(%s, %d) = %v, want %v", tt.cred, tt.code, got, tt.want)
		}
	}
}

// Decide's guards on one outcome: the cap withholds once per streak, a
// shadow rule publishes once while its shadow ban holds, the ladder climbs
// only once a cooldown ended.
func TestDecideGuards(t *testing.T) {
	at := time.Date(2026, 9, 21, 10, 0, 0, 0, time.UTC)
	ev := Event{V: SchemaVersion, Kind: KindOutcomeRecorded, At: at, Seq: 9,
		Outcome: &Outcome{Credential: "a", Model: "m", Status: 503, Class: ClassServerError}}
	capped := BanPolicy{Default: Rule{MaxAttempts: 1, Permanent: true}, Codes: []int{503}, MaxEjectionPercent: 50}
	f := Facts{Counts: map[int]int{503: 1}, Streak: Pos{Seq: 9}, ModelPairs: 2, ModelBanned: 1}
	if d := Decide(capped, ev, f); len(d) != 1 || d[0].Kind != KindBanWithheld || d[0].ID != "withheld/a/m/9" {
		t.Fatalf("at the cap: %+v, want one ban.withheld", d)
	}
	f.Withheld = f.Streak
	if d := Decide(capped, ev, f); len(d) != 0 {
		t.Fatalf("the streak withheld already: %+v, want nothing", d)
	}
	f.ModelBanned, f.ModelPairs = 0, 2
	if d := Decide(capped, ev, f); len(d) != 1 || d[0].Kind != KindBanImposed || d[0].Ban.Cap != 50 {
		t.Fatalf("room under the cap: %+v, want a ban carrying the cap", d)
	}
	shadow := BanPolicy{Default: Rule{MaxAttempts: 1, Duration: time.Minute, Shadow: true}, Codes: []int{503}}
	if d := Decide(shadow, ev, Facts{Counts: map[int]int{503: 1}, Streak: Pos{Seq: 9}}); len(d) != 1 || d[0].Kind != KindBanShadowed ||
		d[0].Shadowed.Until == nil || !d[0].Shadowed.Until.Equal(at.Add(time.Minute)) {
		t.Fatalf("a shadow rule: %+v, want one ban.shadowed until a minute on", d)
	}
	if d := Decide(shadow, ev, Facts{Counts: map[int]int{503: 1}, Streak: Pos{Seq: 9}, WouldBan: true}); len(d) != 0 {
		t.Fatalf("while the shadow ban holds: %+v, want nothing", d)
	}
	ladder := BanPolicy{Cooldown: CooldownPolicy{RateLimitBase: time.Second, RateLimitMax: time.Minute}}
	ev.Outcome.Status, ev.Outcome.Class = 429, ClassRateLimited
	if d := Decide(ladder, ev, Facts{LadderStep: 2}); len(d) != 1 || d[0].Cooldown.Step != 3 || !d[0].Cooldown.Until.Equal(at.Add(4*time.Second)) {
		t.Fatalf("after step 2: %+v, want step 3 for 4s", d)
	}
	if d := Decide(ladder, ev, Facts{LadderStep: 2, CooldownUntil: at.Add(time.Second)}); len(d) != 0 {
		t.Fatalf("while cooling: %+v, want no climb", d)
	}
}
