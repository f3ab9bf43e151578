package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

// startReady is startOn, returning once /readyz answers 200.
func startReady(t *testing.T, cfg *config.Config, clock clockwork.Clock) *running {
	t.Helper()
	r := startOn(t, cfg, clock)
	testkit.Eventually(t, "the router ready", func() bool {
		st, _, _ := r.do(t, "GET", "/readyz", "", nil)
		return st == 200
	})
	return r
}

// blip sends 100 chat requests while every upstream answers 503, 20 ms
// apart on the router's clock (2 s at 50 requests/s), then heals the
// upstreams and waits until every decision is in the log and folded.
func blip(t *testing.T, r *running, clock *clockwork.FakeClock, ups ...*upstream) {
	t.Helper()
	for _, u := range ups {
		u.status.Store(503)
	}
	for range 100 {
		if st, _, body := chat(t, r); st == 200 {
			t.Fatalf("during the blip a request succeeded: %s", body)
		}
		clock.Advance(20 * time.Millisecond)
	}
	for _, u := range ups {
		u.status.Store(200)
	}
	settle(t, r)
}

// banned lists the pairs r's routing holds banned.
func banned(r *running, clock clockwork.Clock) []string {
	var out []string
	for _, b := range r.live.Load().Bans(clock.Now()) {
		out = append(out, b.Credential+"/"+b.Model)
	}
	return out
}

// With the defaults (ban_duration permanent, 503 watched, max_attempts 3)
// a 2 s provider-wide blip bans every pair of the model for good: it is
// dark after the upstreams are healthy again. This pins the default.
func TestBlipWithDefaultsDarkensTheModel(t *testing.T) {
	a, b := newUpstream(t, 200), newUpstream(t, 200)
	clock := clockwork.NewFakeClock()
	r := startReady(t, testConfig(t, tempStore(t), "file", "", a, b), clock)
	blip(t, r, clock, a, b)
	if got := banned(r, clock); len(got) != 2 {
		t.Fatalf("banned after the blip: %v, want both pairs", got)
	}
	clock.Advance(time.Hour) // past the model's bench too
	for i := range 5 {
		if st, _, _ := chat(t, r); st != 429 {
			t.Fatalf("request %d after the blip: %d, want 429: the model is dark", i, st)
		}
	}
}

// With max_ejection_percent: 50 the same blip bans at most one of the two
// pairs: the other's ban is withheld (a ban.withheld event, counted and
// logged) and no client request fails once the upstreams are healthy.
// The bench, which would hold the model for its duration whatever the cap,
// is off here (fallback.panic routes to a benched model).
func TestBlipWithEjectionCapKeepsAPairInRotation(t *testing.T) {
	a, b := newUpstream(t, 200), newUpstream(t, 200)
	clock := clockwork.NewFakeClock()
	extra := "fail2ban:\n  max_ejection_percent: 50\nmodel_bench:\n  failures: 0\n"
	r := startReady(t, testConfig(t, tempStore(t), "file", extra, a, b), clock)
	// Both pairs are known to the log before the blip, as in a pool that
	// has served.
	for range 4 {
		if st, _, body := chat(t, r); st != 200 {
			t.Fatalf("before the blip: %d %s", st, body)
		}
	}
	blip(t, r, clock, a, b)
	if got := banned(r, clock); len(got) > 1 {
		t.Fatalf("banned after the blip: %v, want at most one pair", got)
	}
	withheld := countEvents(t, r, func(ev domain.Event) bool { return ev.Kind == domain.KindBanWithheld })
	if withheld != 1 {
		// The pair left in rotation failed all through the blip: one
		// streak, withheld once, not once per failure.
		t.Fatalf("%d ban.withheld in the log, want 1", withheld)
	}
	for i := range 20 {
		if st, _, body := chat(t, r); st != 200 {
			t.Fatalf("request %d after the blip: %d %s", i, st, body)
		}
	}
	_, _, m := r.do(t, "GET", "/metrics", "", nil)
	if want := fmt.Sprintf(`airouter_bans_withheld_total{model="gpt-test"} %d`, withheld); !strings.Contains(string(m), want) {
		t.Errorf("/metrics lacks %s:\n%s", want, grepLines(string(m), "withheld"))
	}
	if got := banned(r, clock); len(got) > 1 {
		t.Fatalf("banned after the requests: %v, want at most one pair", got)
	}
}

// A watched 400 rule with enforce: false publishes ban.shadowed and bans
// nothing: requests keep reaching the pair, /health shows would_ban, and
// only the shadow counter counts it.
func TestShadowRuleBansNothing(t *testing.T) {
	a := newUpstream(t, 400)
	clock := clockwork.NewFakeClock()
	extra := "fail2ban:\n  error_codes: [400, 503]\n  error_code_rules:\n" +
		"    - code: 400\n      max_attempts: 2\n      ban_duration: 5m\n      enforce: false\n"
	r := startReady(t, testConfig(t, tempStore(t), "file", extra, a), clock)
	for i := range 4 {
		if st, _, body := chat(t, r); st == 200 {
			t.Fatalf("request %d: %d %s, want the upstream's failure", i, st, body)
		}
		settle(t, r)
	}
	if a.calls.Load() != 4 {
		t.Fatalf("the upstream saw %d requests, want all 4: a shadow rule bans nothing", a.calls.Load())
	}
	if got := banned(r, clock); len(got) != 0 {
		t.Fatalf("bans %v, want none", got)
	}
	if n := countEvents(t, r, func(ev domain.Event) bool { return ev.Kind == domain.KindBanShadowed }); n != 1 {
		t.Fatalf("%d ban.shadowed events, want 1 (one per streak while the shadow ban holds)", n)
	}
	st, _, body := r.do(t, "GET", "/health", "", nil)
	h := string(body)
	if st != 200 || !strings.Contains(h, `"would_ban":true`) ||
		!strings.Contains(h, `"would_ban_reason":"2 x 400 (rule 400: max_attempts 2, ban 5m)"`) || strings.Contains(h, `"is_banned":true`) {
		t.Fatalf("/health %d: want would_ban and no ban:\n%s", st, h)
	}
	_, _, m := r.do(t, "GET", "/metrics", "", nil)
	if want := `airouter_shadow_bans_total{credential="cred-a",error_code="400",model="gpt-test"} 1`; !strings.Contains(string(m), want) {
		t.Errorf("/metrics lacks %s:\n%s", want, grepLines(string(m), "shadow"))
	}
	if line := grepLines(string(m), `auto_ai_router_credential_ban_events_total{`); line != "" {
		t.Errorf("a shadow ban counted as a ban: %s", line)
	}
}

// cooldownLeft waits until r's routing holds cred's model cooling down
// and returns how long from the clock's now.
func cooldownLeft(t *testing.T, r *running, clock clockwork.Clock, cred, model string) time.Duration {
	t.Helper()
	var left time.Duration
	testkit.Eventually(t, cred+"/"+model+" cooling down", func() bool {
		b, ok := r.live.Load().Blocked(cred, model, clock.Now())
		if !ok || b.Reason != domain.BlockCoolingDown {
			return false
		}
		left = b.Until.Sub(clock.Now())
		return true
	})
	return left
}

// Consecutive 429s without Retry-After cool the pair for the base, then
// twice, then four times; a success starts the ladder again.
func TestCooldownLadder(t *testing.T) {
	a := newUpstream(t, 429)
	clock := clockwork.NewFakeClock()
	extra := "fail2ban:\n  error_codes: [500]\ncooldown:\n  rate_limit_base: 1s\n  rate_limit_max: 1m\n"
	r := startReady(t, testConfig(t, tempStore(t), "file", extra, a), clock)
	for step, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		chat(t, r)
		if got := cooldownLeft(t, r, clock, "cred-a", "gpt-test"); got != want {
			t.Fatalf("step %d: cooling for %s, want %s", step+1, got, want)
		}
		calls := a.calls.Load()
		if st, _, _ := chat(t, r); st != 429 || a.calls.Load() != calls {
			t.Fatalf("step %d: a request while cooling got %d and reached the upstream %d times", step+1, st, a.calls.Load()-calls)
		}
		clock.Advance(want)
	}
	a.status.Store(200)
	if st, _, body := chat(t, r); st != 200 {
		t.Fatalf("after the cooldown: %d %s", st, body)
	}
	settle(t, r)
	a.status.Store(429)
	chat(t, r)
	if got := cooldownLeft(t, r, clock, "cred-a", "gpt-test"); got != time.Second {
		t.Fatalf("after a success: cooling for %s, want the base again", got)
	}
	var reasons []string
	countEvents(t, r, func(ev domain.Event) bool {
		if ev.Kind == domain.KindCooldownStarted {
			reasons = append(reasons, ev.Cooldown.Reason)
		}
		return false
	})
	want := []string{"rate limit, step 1: 1s", "rate limit, step 2: 2s", "rate limit, step 3: 4s", "rate limit, step 1: 1s"}
	if strings.Join(reasons, "|") != strings.Join(want, "|") {
		t.Fatalf("cooldown reasons %q, want %q", reasons, want)
	}
}

// A 401 with cooldown.auth takes the whole credential out at once: every
// model of it cools down, and requests for its other model go to the other
// credential.
func TestAuthCooldownTakesTheWholeCredentialOut(t *testing.T) {
	a, b := newUpstream(t, 401), newUpstream(t, 200)
	clock := clockwork.NewFakeClock()
	extra := "  - name: gpt-other\nfail2ban:\n  error_codes: [500]\ncooldown:\n  auth: 5m\n"
	r := startReady(t, testConfig(t, tempStore(t), "file", extra, a, b), clock)
	for a.calls.Load() == 0 {
		if st, _, body := chat(t, r); st != 200 {
			t.Fatalf("a request: %d %s, want it failed over to cred-b", st, body)
		}
	}
	if got := cooldownLeft(t, r, clock, "cred-a", "gpt-other"); got != 5*time.Minute {
		t.Fatalf("cred-a's other model cools for %s, want 5m", got)
	}
	calls := a.calls.Load()
	for range 6 {
		if st, _, body := r.do(t, "POST", "/v1/chat/completions", testMasterKey, map[string]any{
			"model": "gpt-other", "messages": []map[string]string{{"role": "user", "content": "hi"}},
		}); st != 200 {
			t.Fatalf("gpt-other: %d %s", st, body)
		}
	}
	if a.calls.Load() != calls {
		t.Fatalf("cred-a got %d requests while its credential cools down", a.calls.Load()-calls)
	}
	clock.Advance(5 * time.Minute)
	if _, ok := r.live.Load().Blocked("cred-a", "gpt-other", clock.Now()); ok {
		t.Fatal("cred-a still held after its cooldown")
	}
}

// chatUntilCalled sends chat requests until u has seen n more, and fails
// when a client request fails (the other credential serves).
func chatUntilCalled(t *testing.T, r *running, u *upstream, n int64) {
	t.Helper()
	want := u.calls.Load() + n
	for i := 0; u.calls.Load() < want; i++ {
		if i > 50 {
			t.Fatalf("the upstream saw %d of %d requests", u.calls.Load()-want+n, n)
		}
		if st, _, body := chat(t, r); st != 200 {
			t.Fatalf("a request failed: %d %s", st, body)
		}
		settle(t, r)
	}
}

// `replay` tells what the guards did as it happened, from one log holding
// all four: a ladder cooldown, a shadow ban, a ban and the ban the
// ejection cap withheld, then the ban's recovery probe and its lift by
// recovery.
func TestReplayShowsTheGuards(t *testing.T) {
	a, b := newUpstream(t, 200), newUpstream(t, 200)
	clock := clockwork.NewFakeClock()
	extra := "fail2ban:\n  error_codes: [400, 503]\n  max_ejection_percent: 50\n  error_code_rules:\n" +
		"    - code: 400\n      max_attempts: 2\n      ban_duration: 5m\n      enforce: false\n" +
		"  recovery:\n    probe_after: 1m\n" +
		"cooldown:\n  rate_limit_base: 1s\nmodel_bench:\n  failures: 0\n"
	path, cfg := replayConfig(t, eventsAt(tempStore(t), "file", ""), extra, a, b)
	r := startReady(t, cfg, clock)
	chatUntilCalled(t, r, b, 1)
	a.status.Store(429)
	chatUntilCalled(t, r, a, 1)
	cooldownLeft(t, r, clock, "cred-a", "gpt-test")
	clock.Advance(time.Second)
	a.status.Store(400)
	chatUntilCalled(t, r, a, 2)
	a.status.Store(503)
	b.status.Store(503)
	for range 8 {
		chat(t, r)
		settle(t, r)
	}
	held := banned(r, clock)
	if len(held) != 1 {
		t.Fatalf("banned %v, want one pair (the other withheld)", held)
	}
	cred := strings.TrimSuffix(held[0], "/gpt-test")
	a.status.Store(200)
	b.status.Store(200)
	clock.Advance(time.Minute)
	waitClaim(t, r, clock, cred, 0)
	if st, _, body := chat(t, r); st != 200 {
		t.Fatalf("the probing request: %d %s", st, body)
	}
	testkit.Eventually(t, "the ban lifted by recovery", func() bool { _, b := isBlocked(r, clock, cred); return !b })
	r.stop()
	replayShows(t, path,
		"cred-a  gpt-test  cooling down until ",
		" (429 rate limit, step 1: 1s)",
		"cred-a  gpt-test  would have banned (shadow rule, enforce: false; nothing banned) 2 x 400 in ",
		", rule 400: max_attempts 2, ban 5m, until ",
		"  gpt-test  banned (fail2ban) 3 x 503",
		"  gpt-test  ban withheld by the ejection cap (1 of 2 pairs of the model banned, cap 50%): rule ",
		cred+"  gpt-test  recovery probe 1 claimed by ",
		cred+"  gpt-test  unbanned (recovery): a request to it succeeded",
	)
}

// A withheld pair stays counted: once the ban of the other pair is lifted
// (its key fixed), the withheld pair's next failure bans it.
func TestEjectionCapBansTheWithheldPairOnceItAllows(t *testing.T) {
	ups := map[string]*upstream{"cred-a": newUpstream(t, 503), "cred-b": newUpstream(t, 503)}
	clock := clockwork.NewFakeClock()
	extra := "fail2ban:\n  max_attempts: 1\n  max_ejection_percent: 50\n  error_codes: [503]\nmodel_bench:\n  failures: 0\n"
	r := startReady(t, testConfig(t, tempStore(t), "file", extra, ups["cred-a"], ups["cred-b"]), clock)
	for range 2 {
		chat(t, r)
		settle(t, r)
	}
	first := banned(r, clock)
	if len(first) != 1 {
		t.Fatalf("banned %v, want one pair", first)
	}
	fixed, other := strings.TrimSuffix(first[0], "/gpt-test"), "cred-a"
	if fixed == "cred-a" {
		other = "cred-b"
	}
	ups[fixed].status.Store(200)
	if st, _, body := r.do(t, "POST", "/api/unban", testMasterKey, map[string]string{"credential": fixed, "model": "gpt-test"}); st != 200 {
		t.Fatalf("unban %s: %d %s", fixed, st, body)
	}
	calls := ups[other].calls.Load()
	for ups[other].calls.Load() == calls {
		if st, _, body := chat(t, r); st != 200 {
			t.Fatalf("a request after the unban: %d %s, want %s to serve it", st, body, fixed)
		}
	}
	settle(t, r)
	if got := banned(r, clock); len(got) != 1 || got[0] != other+"/gpt-test" {
		t.Fatalf("banned %v after the unban, want the withheld %s", got, other)
	}
	if n := countEvents(t, r, func(ev domain.Event) bool { return ev.Kind == domain.KindBanWithheld }); n != 1 {
		t.Fatalf("%d ban.withheld, want 1 (%s, before the unban)", n, other)
	}
}
