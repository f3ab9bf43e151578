package proxy

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

func TestFailoverOnRateLimitIsInvisible(t *testing.T) {
	a := newUpstream(t, step{status: 429, body: `{"error":{"message":"slow down"}}`, header: map[string]string{"Retry-After": "7"}})
	b := newUpstream(t)
	f := newFixture(t, []Credential{cred("a", a), cred("b", b)}, routesFor("gpt-4o", "a", "b"), nil)
	resp, body := f.post("/v1/chat/completions", chatReq)
	if resp.StatusCode != 200 || body != chatOK("hello") {
		t.Fatalf("status %d body %s", resp.StatusCode, body)
	}
	if got := resp.Header.Get(hdrAttempts); got != "2" {
		t.Errorf("X-Fallback-Attempts %q, want 2", got)
	}
	if got := resp.Header.Get(hdrTrail); got != "a/gpt-4o=rate_limited; b/gpt-4o=ok" {
		t.Errorf("X-Fallback-Trail %q", got)
	}
	os := f.out.wait(t, 2)
	if os[0].Credential != "a" || os[0].Status != 429 || os[0].Class != domain.ClassRateLimited ||
		os[0].RetryAfterMS != 7000 || os[0].Attempt != 1 {
		t.Errorf("first outcome %+v", os[0])
	}
	if os[1].Credential != "b" || os[1].Class != domain.ClassOK || os[1].Attempt != 2 || os[1].RequestID != os[0].RequestID {
		t.Errorf("second outcome %+v", os[1])
	}
}

func TestRetryableOutcomesFailOver(t *testing.T) {
	cases := []struct {
		name  string
		first step
		class domain.Class
	}{
		{"500", step{status: 500, body: `{"error":{"message":"boom"}}`}, domain.ClassServerError},
		{"503", step{status: 503, body: `oops`}, domain.ClassServerError},
		{"401", step{status: 401, body: `{"error":{"message":"bad key"}}`}, domain.ClassAuth},
		{"402", step{status: 402, body: `{}`}, domain.ClassPayment},
		{"403", step{status: 403, body: `{}`}, domain.ClassAuth},
		{"408", step{status: 408, body: `{}`}, domain.ClassTimeout},
		{"dropped connection", step{drop: true}, domain.ClassConnection},
		{"empty completion", step{status: 200, body: chatEmpty}, domain.ClassEmptyCompletion},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newUpstream(t, c.first)
			b := newUpstream(t)
			f := newFixture(t, []Credential{cred("a", a), cred("b", b)}, routesFor("gpt-4o", "a", "b"), nil)
			resp, body := f.post("/v1/chat/completions", chatReq)
			if resp.StatusCode != 200 || body != chatOK("hello") {
				t.Fatalf("status %d body %s", resp.StatusCode, body)
			}
			if o := f.out.wait(t, 2)[0]; o.Credential != "a" || o.Class != c.class {
				t.Errorf("first outcome %+v, want class %s", o, c.class)
			}
		})
	}
	t.Run("connection refused", func(t *testing.T) {
		dead := newUpstream(t)
		dead.srv.Close()
		b := newUpstream(t)
		f := newFixture(t, []Credential{cred("a", dead), cred("b", b)}, routesFor("gpt-4o", "a", "b"), nil)
		if resp, _ := f.post("/v1/chat/completions", chatReq); resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		if o := f.out.wait(t, 1)[0]; o.Class != domain.ClassConnection || o.Code() != domain.StatusTransportFailure {
			t.Errorf("outcome %+v", o)
		}
	})
}

func TestClientErrorsPassThroughUnchanged(t *testing.T) {
	cases := []struct {
		status int
		body   string
		class  domain.Class
	}{
		{400, `{"error":{"message":"bad messages","type":"invalid_request_error"}}`, domain.ClassClientError},
		{404, `{"error":{"message":"The model gpt-9 does not exist","code":"model_not_found"}}`, domain.ClassModelNotFound},
		{413, `{"error":{"message":"too big"}}`, domain.ClassClientError},
		{422, `{"detail":"unprocessable"}`, domain.ClassClientError},
		{400, `{"error":{"message":"Your request was rejected by our content policy","code":"content_policy_violation"}}`, domain.ClassContentPolicy},
	}
	for _, c := range cases {
		a := newUpstream(t, step{status: c.status, body: c.body, header: map[string]string{"X-Upstream": "1"}})
		b := newUpstream(t)
		f := newFixture(t, []Credential{cred("a", a), cred("b", b)}, routesFor("gpt-4o", "a", "b"), nil)
		resp, body := f.post("/v1/chat/completions", chatReq)
		if resp.StatusCode != c.status || body != c.body || resp.Header.Get("X-Upstream") != "1" {
			t.Errorf("%d: got status %d body %s, want the upstream's answer", c.status, resp.StatusCode, body)
		}
		if b.count() != 0 {
			t.Errorf("%d: a client error failed over", c.status)
		}
		if o := f.out.wait(t, 1)[0]; o.Class != c.class || o.Status != c.status {
			t.Errorf("%d: outcome %+v, want class %s", c.status, o, c.class)
		}
		if got := resp.Header.Get(hdrTrail); got != "a/gpt-4o="+string(c.class) {
			t.Errorf("%d: trail %q", c.status, got)
		}
	}
}

func TestWatchedClientErrorFailsOver(t *testing.T) {
	a := newUpstream(t, step{status: 400, body: `{"error":{"message":"account blocked"}}`})
	b := newUpstream(t)
	policy := domain.BanPolicy{Codes: []int{429}, Credentials: map[string]domain.CredentialRules{"a": {Codes: []int{400, 429}}}}
	f := newFixture(t, []Credential{cred("a", a), cred("b", b)}, routesFor("gpt-4o", "a", "b"), func(d *Deps) {
		d.Watched = policy.Watched
	})
	resp, _ := f.post("/v1/chat/completions", chatReq)
	if resp.StatusCode != 200 || resp.Header.Get(hdrTrail) != "a/gpt-4o=client_error; b/gpt-4o=ok" {
		t.Fatalf("status %d trail %q: a watched 400 must fail over", resp.StatusCode, resp.Header.Get(hdrTrail))
	}
	// The same 400 on b, which does not watch 400, passes through.
	a2 := newUpstream(t, step{status: 400, body: `{"error":{"message":"bad request"}}`})
	f2 := newFixture(t, []Credential{cred("b", a2), cred("a", newUpstream(t))}, routesFor("gpt-4o", "b", "a"), func(d *Deps) {
		d.Watched = policy.Watched
	})
	if resp, _ := f2.post("/v1/chat/completions", chatReq); resp.StatusCode != 400 {
		t.Errorf("unwatched 400: status %d, want it passed through", resp.StatusCode)
	}
	// A content-policy refusal is about the prompt: passed through even
	// with its status watched.
	refusal := `{"error":{"message":"Your request was rejected by our content policy","code":"content_policy_violation"}}`
	a3 := newUpstream(t, step{status: 400, body: refusal})
	b3 := newUpstream(t)
	f3 := newFixture(t, []Credential{cred("a", a3), cred("b", b3)}, routesFor("gpt-4o", "a", "b"), func(d *Deps) {
		d.Watched = policy.Watched
	})
	resp, body := f3.post("/v1/chat/completions", chatReq)
	if resp.StatusCode != 400 || body != refusal || b3.count() != 0 {
		t.Errorf("watched content-policy 400: status %d body %q, b called %d times; want it passed through", resp.StatusCode, body, b3.count())
	}
}

func TestWeightedRoundRobinProportions(t *testing.T) {
	a, b, c := newUpstream(t), newUpstream(t), newUpstream(t)
	creds := []Credential{cred("a", a), cred("b", b), cred("c", c)}
	creds[0].Weight = 5
	routes := []Route{{Model: "gpt-4o", Credential: "a"}, {Model: "gpt-4o", Credential: "b", Weight: 3}, {Model: "gpt-4o", Credential: "c"}}
	f := newFixture(t, creds, routes, nil)
	for range 180 {
		if resp, _ := f.post("/v1/chat/completions", chatReq); resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	if a.count() != 100 || b.count() != 60 || c.count() != 20 {
		t.Errorf("requests a=%d b=%d c=%d, want 100/60/20 for weights 5:3:1", a.count(), b.count(), c.count())
	}
}

func TestPairRPMLimitsOneModelOnly(t *testing.T) {
	up := newUpstream(t)
	routes := []Route{{Model: "gpt-4o", Credential: "a", RPM: 1}, {Model: "mini", Credential: "a"}}
	f := newFixture(t, []Credential{cred("a", up)}, routes, nil)
	f.post("/v1/chat/completions", chatReq)
	if resp, _ := f.post("/v1/chat/completions", chatReq); resp.StatusCode != 429 {
		t.Errorf("pair over its rpm: status %d", resp.StatusCode)
	}
	if resp, _ := f.post("/v1/chat/completions", `{"model":"mini"}`); resp.StatusCode != 200 {
		t.Errorf("another model of the credential: status %d", resp.StatusCode)
	}
}

func TestFallbackCredentialsOnlyWhenPrimariesAreGone(t *testing.T) {
	a, b, fb := newUpstream(t), newUpstream(t), newUpstream(t)
	creds := []Credential{cred("fb", fb), cred("a", a), cred("b", b)}
	creds[0].IsFallback = true
	f := newFixture(t, creds, routesFor("gpt-4o", "fb", "a", "b"), nil)
	for range 10 {
		f.post("/v1/chat/completions", chatReq)
	}
	if fb.count() != 0 || a.count() != 5 || b.count() != 5 {
		t.Fatalf("with healthy primaries: a=%d b=%d fallback=%d", a.count(), b.count(), fb.count())
	}
	// Primaries banned: the fallback serves.
	until := f.clock.Now().Add(time.Minute)
	f.gate[domain.Key{Credential: "a", Model: "gpt-4o"}] = domain.Block{Reason: domain.BlockBanned, Until: until}
	f.gate[domain.Key{Credential: "b", Model: "*"}] = domain.Block{Reason: domain.BlockBanned, Permanent: true}
	resp, _ := f.post("/v1/chat/completions", chatReq)
	if resp.StatusCode != 200 || fb.count() != 1 || resp.Header.Get(hdrTrail) != "fb/gpt-4o=ok" {
		t.Fatalf("primaries banned: status %d trail %q fallback calls %d", resp.StatusCode, resp.Header.Get(hdrTrail), fb.count())
	}
	// Primaries failing within one request: the fallback joins last.
	clear(f.gate)
	a.setScript(step{status: 503})
	b.setScript(step{status: 500})
	resp, _ = f.post("/v1/chat/completions", chatReq)
	trail := resp.Header.Get(hdrTrail)
	if resp.StatusCode != 200 || !strings.HasSuffix(trail, "; fb/gpt-4o=ok") || strings.Count(trail, ";") != 2 {
		t.Errorf("primaries failing: status %d trail %q", resp.StatusCode, trail)
	}
}

func TestRequestTimeoutFailsOver(t *testing.T) {
	a := newUpstream(t, step{hang: true})
	b := newUpstream(t)
	f := newFixture(t, []Credential{cred("a", a), cred("b", b)}, routesFor("gpt-4o", "a", "b"), func(d *Deps) {
		d.RequestTimeout = 50 * time.Millisecond
		d.Clock = nil // request_timeout cuts a real connection on the real clock
	})
	resp, _ := f.post("/v1/chat/completions", chatReq)
	if resp.StatusCode != 200 || resp.Header.Get(hdrTrail) != "a/gpt-4o=timeout; b/gpt-4o=ok" {
		t.Fatalf("status %d trail %q", resp.StatusCode, resp.Header.Get(hdrTrail))
	}
	if o := f.out.wait(t, 1)[0]; o.Class != domain.ClassTimeout || o.Code() != domain.StatusTimeout {
		t.Errorf("outcome %+v", o)
	}
	<-a.canceled // the hung upstream request was canceled
}

func TestTimeBudgetCutsAHangingAttempt(t *testing.T) {
	const budget = 5 * time.Second
	a := newUpstream(t, step{hang: true})
	b := newUpstream(t)
	f := newFixture(t, []Credential{cred("a", a), cred("b", b)}, routesFor("gpt-4o", "a", "b"), nil)
	f.set.TimeBudget = domain.Duration(budget)
	done := f.send("/v1/chat/completions", chatReq)
	if tm := f.nextTimer(); tm.d != budget {
		t.Fatalf("the attempt's timer is armed for %v, want the whole %v budget", tm.d, budget)
	}
	testkit.Receive(t, "the request to reach a", a.arrived)
	notYet(t, done)
	f.clock.Advance(budget)
	resp, _ := f.await(done)
	if resp.StatusCode != http.StatusGatewayTimeout || b.count() != 0 {
		t.Fatalf("status %d calls to b %d", resp.StatusCode, b.count())
	}
	// Cut by our budget, not the credential's fault: not counted.
	if o := f.out.wait(t, 1)[0]; o.Class != domain.ClassCanceled {
		t.Errorf("outcome %+v, want canceled", o)
	}
	if resp.Header.Get(hdrTrail) != "a/gpt-4o=timeout" {
		t.Errorf("trail %q", resp.Header.Get(hdrTrail))
	}
}

func TestClientDisconnectCancelsUpstream(t *testing.T) {
	a := newUpstream(t, step{hang: true})
	b := newUpstream(t)
	f := newFixture(t, []Credential{cred("a", a), cred("b", b)}, routesFor("gpt-4o", "a", "b"), nil)
	ctx, cancel := contextWithCancel(t)
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL+"/v1/chat/completions", strings.NewReader(chatReq))
		req.Header.Set("Authorization", "Bearer "+masterKey)
		resp, err := f.srv.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	<-a.arrived
	cancel()
	<-a.canceled
	if err := <-done; err == nil {
		t.Fatal("the canceled client request succeeded")
	}
	if o := f.out.wait(t, 1)[0]; o.Class != domain.ClassCanceled || o.Code() != 0 {
		t.Errorf("outcome %+v, want canceled with no code", o)
	}
	if b.count() != 0 {
		t.Errorf("a canceled request failed over")
	}
}
