package domain

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 9, 21, 10, 0, 0, 0, time.UTC)

// examplePolicy is a Fail2Ban configuration with every level of rule:
// top-level max_attempts 3 and a permanent ban, the usual codes, a global 429
// rule and the cometapi-pool-1 override that watches 400.
func examplePolicy() BanPolicy {
	return BanPolicy{
		Default: Rule{MaxAttempts: 3, Permanent: true},
		Codes:   []int{401, 403, 429, 500, 502, 503, 504},
		Rules:   map[int]Rule{429: {MaxAttempts: 5, Duration: 5 * time.Minute}},
		Credentials: map[string]CredentialRules{
			"cometapi-pool-1": {
				Codes: []int{400, 429, 500, 502, 503, 504},
				Rules: map[int]Rule{400: {MaxAttempts: 3, Duration: 15 * time.Minute}},
			},
		},
		ProxyCredentials: map[string]bool{"relay-1": true},
		Bench:            BenchPolicy{Failures: 3, Window: 15 * time.Minute, Duration: 10 * time.Minute},
	}
}

// outcomeEv is a live outcome event at log position seq, t0+seq seconds.
func outcomeEv(seq uint64, cred, model string, status int, class Class) Event {
	return Event{
		V: SchemaVersion, Kind: KindOutcomeRecorded, Seq: seq,
		At:      t0.Add(time.Duration(seq) * time.Second),
		Outcome: &Outcome{Credential: cred, Model: model, Status: status, Class: class, Attempt: 1},
	}
}

func withRetryAfter(ev Event, ms int64) Event {
	o := *ev.Outcome
	o.RetryAfterMS = ms
	ev.Outcome = &o
	return ev
}

func asProxy(ev Event) Event {
	o := *ev.Outcome
	o.Proxy = true
	ev.Outcome = &o
	return ev
}

// streakSeq is where the failure streak of the pair in counts began.
const streakSeq = 2

// counts is the Facts of a pair with these counters (code, n, ...) in a
// streak that began at streakSeq.
func counts(kv ...int) Facts {
	c := map[int]int{}
	for i := 0; i+1 < len(kv); i += 2 {
		c[kv[i]] = kv[i+1]
	}
	return Facts{Counts: c, Streak: Pos{Seq: streakSeq}}
}

// banEv is the Fail2Ban ban that cause decides in the streak of counts.
func banEv(cause Event, code, n int, d time.Duration, reason string) Event {
	o := cause.Outcome
	b := &Ban{
		Credential: o.Credential, Model: o.Model, Origin: OriginFail2Ban, Reason: reason,
		ErrorCode: code, Since: cause.At, Failures: n, CauseSeq: cause.Seq,
	}
	if d == 0 {
		b.Permanent = true
	} else {
		until := cause.At.Add(d)
		b.Until = &until
	}
	return Event{V: SchemaVersion, Kind: KindBanImposed, At: cause.At, Ban: b,
		ID: "f2b/" + o.Credential + "/" + o.Model + "/" + u64(streakSeq)}
}

func cooldownEv(cause Event, d time.Duration) Event {
	o := cause.Outcome
	return Event{V: SchemaVersion, Kind: KindCooldownStarted, At: cause.At,
		ID: "cooldown/" + o.Credential + "/" + o.Model + "/" + u64(cause.Seq),
		Cooldown: &Cooldown{Credential: o.Credential, Model: o.Model, Until: cause.At.Add(d),
			Status: o.Status, Reason: "Retry-After " + ShortDuration(d), CauseSeq: cause.Seq}}
}

func benchEv(cause Event, d time.Duration, n int, creds []string, reason string) Event {
	return Event{V: SchemaVersion, Kind: KindModelBenched, At: cause.At,
		ID: "bench/" + cause.Outcome.Model + "/" + u64(cause.Seq),
		Bench: &Bench{Model: cause.Outcome.Model, Until: cause.At.Add(d), Failures: n,
			Credentials: creds, Reason: reason, CauseSeq: cause.Seq}}
}

func u64(n uint64) string { return strconv.FormatUint(n, 10) }

func TestDecide(t *testing.T) {
	for _, group := range []struct {
		name  string
		cases []decideCase
	}{{"fail2ban", fail2banCases()}, {"cooldown", cooldownCases()}, {"bench", benchCases()}} {
		for _, tc := range group.cases {
			t.Run(group.name+"/"+tc.name, func(t *testing.T) {
				got := Decide(tc.policy, tc.ev, tc.facts)
				if g, w := encodeAll(t, got), encodeAll(t, tc.want); g != w {
					t.Fatalf("Decide:\n got %s\nwant %s", g, w)
				}
				for _, e := range got {
					if err := e.Valid(); err != nil {
						t.Errorf("decision %s is not valid: %v", e.ID, err)
					}
				}
			})
		}
	}
}

// TestDecideDeterministic decides every case twice, from copies, and
// expects byte-identical decisions, ids included.
func TestDecideDeterministic(t *testing.T) {
	for _, tc := range allCases() {
		a := encodeAll(t, Decide(tc.policy, tc.ev, tc.facts))
		b := encodeAll(t, Decide(examplePolicyLike(tc.policy), tc.ev, tc.facts))
		if a != b {
			t.Fatalf("%s: two decisions differ:\n%s\n%s", tc.name, a, b)
		}
	}
}

// examplePolicyLike returns an equal policy built from fresh maps, so the test
// does not pass because two calls share state.
func examplePolicyLike(p BanPolicy) BanPolicy {
	q := p
	q.Rules = map[int]Rule{}
	for k, v := range p.Rules {
		q.Rules[k] = v
	}
	q.Credentials = map[string]CredentialRules{}
	for k, v := range p.Credentials {
		q.Credentials[k] = v
	}
	return q
}

// TestDecideFail2BanIDNamesTheStreak checks that every decision to ban a
// pair within one failure streak has the same id, whichever outcome and
// code decided it, and that another streak or pair has another.
func TestDecideFail2BanIDNamesTheStreak(t *testing.T) {
	p := examplePolicy()
	id := func(ev Event, f Facts) string {
		t.Helper()
		d := Decide(p, ev, f)
		if len(d) != 1 || d[0].Kind != KindBanImposed {
			t.Fatalf("decisions %v, want one ban", d)
		}
		if d[0].Ban.CauseSeq != ev.Seq {
			t.Fatalf("cause_seq %d, want the deciding outcome's %d", d[0].Ban.CauseSeq, ev.Seq)
		}
		return d[0].ID
	}
	inStreak := func(streak uint64, kv ...int) Facts {
		f := counts(kv...)
		f.Streak = Pos{Seq: streak}
		return f
	}
	first := id(outcomeEv(7, "openai-1", "gpt-4o", 500, ClassServerError), inStreak(5, 500, 3))
	if first != "f2b/openai-1/gpt-4o/5" {
		t.Fatalf("id %q, want f2b/openai-1/gpt-4o/5", first)
	}
	for name, got := range map[string]string{
		"a later outcome":   id(outcomeEv(9, "openai-1", "gpt-4o", 500, ClassServerError), inStreak(5, 500, 4)),
		"another code":      id(outcomeEv(9, "openai-1", "gpt-4o", 502, ClassServerError), inStreak(5, 500, 4, 502, 3)),
		"a rule's own code": id(outcomeEv(12, "openai-1", "gpt-4o", 429, ClassRateLimited), inStreak(5, 500, 4, 429, 5)),
	} {
		if got != first {
			t.Errorf("%s in the same streak: id %q, want %q", name, got, first)
		}
	}
	if got := id(outcomeEv(30, "openai-1", "gpt-4o", 500, ClassServerError), inStreak(28, 500, 3)); got == first {
		t.Errorf("another streak has the same id %q", got)
	}
	if got := id(outcomeEv(7, "openai-1", "llama", 500, ClassServerError), inStreak(5, 500, 3)); got == first {
		t.Errorf("another pair has the same id %q", got)
	}
}

func TestDecideCommonPathDoesNotAllocate(t *testing.T) {
	p := examplePolicy()
	ev := outcomeEv(8, "openai-1", "gpt-4o", 429, ClassRateLimited)
	f := Facts{Counts: map[int]int{429: 2}, ModelFailures: failures("a", 1, "b", 2)}
	if n := testing.AllocsPerRun(100, func() { _ = Decide(p, ev, f) }); n != 0 {
		t.Fatalf("a non-deciding outcome allocates %v times, want 0", n)
	}
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		5 * time.Minute: "5m", time.Hour: "1h", 90 * time.Minute: "1h30m",
		90 * time.Second: "1m30s", 1500 * time.Millisecond: "1.5s", 10 * time.Second: "10s",
	} {
		if got := ShortDuration(d); got != want {
			t.Errorf("ShortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

// encodeAll writes the events as JSON Lines, as the log holds them (stamped
// with the schema version, in UTC), for a readable comparison.
func encodeAll(t testing.TB, evs []Event) string {
	t.Helper()
	var b strings.Builder
	for _, e := range evs {
		e.V, e.At = SchemaVersion, e.At.UTC()
		j, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("encode %s: %v", e.ID, err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

func BenchmarkDecide(b *testing.B) {
	p := examplePolicy()
	cases := []struct {
		name string
		ev   Event
		f    Facts
	}{
		{"no-decision", outcomeEv(8, "openai-1", "gpt-4o", 429, ClassRateLimited),
			Facts{Counts: map[int]int{429: 2}, ModelFailures: failures("a", 1, "b", 2)}},
		{"success", outcomeEv(8, "openai-1", "gpt-4o", 200, ClassOK), Facts{}},
		{"ban", outcomeEv(8, "openai-1", "gpt-4o", 500, ClassServerError), Facts{Counts: map[int]int{500: 3}}},
		{"ban+bench", outcomeEv(600, "b", "gpt-4o", 500, ClassServerError),
			Facts{Counts: map[int]int{500: 3}, ModelFailures: failures("a", 10, "c", 20, "b", 600)}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Decide(p, c.ev, c.f)
			}
		})
	}
}
