package proxy

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// What a request that no attempt could serve answers: the status, the
// Retry-After and the error body (exhaust.go; an unknown model's 404 is
// the handler's).

// exhaustion is the body of an exhausted request.
type exhaustion struct {
	Error struct {
		Message string       `json:"message"`
		Type    string       `json:"type"`
		Code    string       `json:"code"`
		Trail   []trailEntry `json:"trail"`
	} `json:"error"`
}

func decodeExhaustion(t *testing.T, body string) exhaustion {
	t.Helper()
	var e exhaustion
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("exhaustion body %q: %v", body, err)
	}
	return e
}

func TestRPMExhaustionAnswers429WithRetryAfter(t *testing.T) {
	up := newUpstream(t)
	c := cred("a", up)
	c.RPM = 2
	f := newFixture(t, []Credential{c}, routesFor("gpt-4o", "a"), nil)
	for i := range 2 {
		if resp, _ := f.post("/v1/chat/completions", chatReq); resp.StatusCode != 200 {
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
		}
		f.clock.Advance(10 * time.Second)
	}
	resp, body := f.post("/v1/chat/completions", chatReq)
	if resp.StatusCode != 429 {
		t.Fatalf("third request: status %d, want 429", resp.StatusCode)
	}
	// The first request leaves the window 60 s after it was made.
	if ra := resp.Header.Get("Retry-After"); ra != "40" {
		t.Errorf("Retry-After %q, want 40", ra)
	}
	if resp.Header.Get(hdrAttempts) != "0" || resp.Header.Get(hdrTrail) != "" {
		t.Errorf("attempts %q trail %q, want 0 and none", resp.Header.Get(hdrAttempts), resp.Header.Get(hdrTrail))
	}
	if e := decodeExhaustion(t, body); e.Error.Type != "rate_limit_error" || e.Error.Code != "rate_limit_exceeded" {
		t.Errorf("body %s", body)
	}
	if up.count() != 2 {
		t.Errorf("upstream got %d requests, want 2", up.count())
	}
	f.clock.Advance(40 * time.Second)
	if resp, _ := f.post("/v1/chat/completions", chatReq); resp.StatusCode != 200 {
		t.Errorf("after the window slid: status %d", resp.StatusCode)
	}
}

func TestExhaustionStatuses(t *testing.T) {
	t.Run("every attempt rate-limited: 429 with the soonest Retry-After", func(t *testing.T) {
		a := newUpstream(t, step{status: 429, body: `{}`, header: map[string]string{"Retry-After": "9"}})
		b := newUpstream(t, step{status: 429, body: `{}`, header: map[string]string{"Retry-After": "5"}})
		f := newFixture(t, []Credential{cred("a", a), cred("b", b)}, routesFor("gpt-4o", "a", "b"), nil)
		resp, body := f.post("/v1/chat/completions", chatReq)
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "5" {
			t.Fatalf("status %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
		e := decodeExhaustion(t, body)
		if len(e.Error.Trail) != 2 || e.Error.Trail[0].Status != 429 || e.Error.Trail[1].Class != domain.ClassRateLimited {
			t.Errorf("trail %+v", e.Error.Trail)
		}
		if resp.Header.Get(hdrAttempts) != "2" {
			t.Errorf("attempts %q", resp.Header.Get(hdrAttempts))
		}
	})
	t.Run("every candidate blocked: 429 until the soonest block ends", func(t *testing.T) {
		a, b := newUpstream(t), newUpstream(t)
		f := newFixture(t, []Credential{cred("a", a), cred("b", b)}, routesFor("gpt-4o", "a", "b"), nil)
		now := f.clock.Now()
		f.gate[domain.Key{Credential: "a", Model: "gpt-4o"}] = domain.Block{Reason: domain.BlockCoolingDown, Until: now.Add(30 * time.Second)}
		f.gate[domain.Key{Credential: "b", Model: "gpt-4o"}] = domain.Block{Reason: domain.BlockBenched, Until: now.Add(11500 * time.Millisecond)}
		resp, _ := f.post("/v1/chat/completions", chatReq)
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "12" || a.count()+b.count() != 0 {
			t.Errorf("status %d Retry-After %q calls %d", resp.StatusCode, resp.Header.Get("Retry-After"), a.count()+b.count())
		}
	})
	t.Run("permanently banned: 429 with Retry-After 1", func(t *testing.T) {
		f := newFixture(t, []Credential{cred("a", newUpstream(t))}, routesFor("gpt-4o", "a"), nil)
		f.gate[domain.Key{Credential: "a", Model: "*"}] = domain.Block{Reason: domain.BlockBanned, Permanent: true}
		if resp, _ := f.post("/v1/chat/completions", chatReq); resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" {
			t.Errorf("status %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	})
	t.Run("mixed failures: 502 with the trail", func(t *testing.T) {
		a := newUpstream(t, step{status: 429, body: `{}`})
		b := newUpstream(t, step{status: 503, body: `{}`})
		f := newFixture(t, []Credential{cred("a", a), cred("b", b)}, routesFor("gpt-4o", "a", "b"), nil)
		resp, body := f.post("/v1/chat/completions", chatReq)
		e := decodeExhaustion(t, body)
		if resp.StatusCode != 502 || e.Error.Type != "api_error" ||
			!strings.Contains(e.Error.Message, "Trail: a/gpt-4o: 429; b/gpt-4o: 503") {
			t.Errorf("status %d body %s", resp.StatusCode, body)
		}
		if resp.Header.Get(hdrTrail) != "a/gpt-4o=rate_limited; b/gpt-4o=server_error" {
			t.Errorf("trail %q", resp.Header.Get(hdrTrail))
		}
	})
	t.Run("time budget spent: 504 and no further hop", func(t *testing.T) {
		var f *fixture
		a := newUpstream(t, step{status: 503, body: `{}`})
		b := newUpstream(t)
		f = newFixture(t, []Credential{cred("a", a), cred("b", b)}, routesFor("gpt-4o", "a", "b"), func(d *Deps) {
			// The budget runs out between the hops: a's 503 is in and
			// its attempt's timer stopped when its outcome is recorded.
			d.Record = func(o domain.Outcome) {
				f.clock.Advance(10 * time.Second)
				f.out.record(o)
			}
		})
		f.set.TimeBudget = domain.Duration(5 * time.Second)
		resp, body := f.post("/v1/chat/completions", chatReq)
		if e := decodeExhaustion(t, body); resp.StatusCode != 504 || e.Error.Code != "fallback_time_budget_exceeded" || b.count() != 0 {
			t.Errorf("status %d body %s calls to b %d", resp.StatusCode, body, b.count())
		}
	})
	t.Run("max_hops 1 is exactly one attempt", func(t *testing.T) {
		a := newUpstream(t, step{status: 503, body: `{}`})
		b := newUpstream(t)
		f := newFixture(t, []Credential{cred("a", a), cred("b", b)}, routesFor("gpt-4o", "a", "b"), nil)
		f.set.MaxHops = 1
		resp, _ := f.post("/v1/chat/completions", chatReq)
		if resp.StatusCode != 502 || resp.Header.Get(hdrAttempts) != "1" || b.count() != 0 {
			t.Errorf("status %d attempts %q calls to b %d", resp.StatusCode, resp.Header.Get(hdrAttempts), b.count())
		}
	})
	t.Run("model no credential serves: 404 without attempts", func(t *testing.T) {
		f := newFixture(t, []Credential{cred("a", newUpstream(t))}, routesFor("gpt-4o", "a"), nil)
		resp, body := f.post("/v1/chat/completions", `{"model":"gpt-9"}`)
		if e := decodeExhaustion(t, body); resp.StatusCode != 404 || e.Error.Code != "model_not_found" || resp.Header.Get(hdrAttempts) != "0" {
			t.Errorf("status %d body %s", resp.StatusCode, body)
		}
	})
}
