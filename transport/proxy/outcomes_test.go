package proxy

import (
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

func TestTPMSkipsACredentialAndExhaustsWith429(t *testing.T) {
	t.Run("skipped by selection", func(t *testing.T) {
		a, b := newUpstream(t), newUpstream(t)
		ca := cred("a", a)
		ca.TPM = 25 // one chatOK (30 tokens) puts it over
		f := newFixture(t, []Credential{ca, cred("b", b)}, routesFor("gpt-4o", "a", "b"), nil)
		for i := range 4 {
			if resp, _ := f.post("/v1/chat/completions", chatReq); resp.StatusCode != 200 {
				t.Fatalf("request %d: status %d", i, resp.StatusCode)
			}
		}
		// Without the tpm limit the round robin would alternate 2:2.
		if a.count() != 1 || b.count() != 3 {
			t.Errorf("calls a=%d b=%d, want 1 and 3: a over its tpm must be skipped", a.count(), b.count())
		}
		if _, tpm := f.p.Usage("a", ""); tpm != 30 {
			t.Errorf("a's tpm window %d, want 30", tpm)
		}
	})
	only := func(t *testing.T, c Credential, routes []Route, first string) {
		t.Helper()
		up := newUpstream(t, step{status: 200, body: first})
		c.BaseURL = up.url() + "/v1"
		f := newFixture(t, []Credential{c}, routes, nil)
		if resp, body := f.post("/v1/chat/completions", chatReq); resp.StatusCode != 200 {
			t.Fatalf("first request: %d %s", resp.StatusCode, body)
		}
		f.clock.Advance(5 * time.Second)
		resp, body := f.post("/v1/chat/completions", chatReq)
		if resp.StatusCode != 429 {
			t.Fatalf("over tpm: status %d body %s, want 429", resp.StatusCode, body)
		}
		ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if err != nil || ra < 1 || ra > 60 {
			t.Errorf("Retry-After %q, want whole seconds in [1, 60]", resp.Header.Get("Retry-After"))
		}
		if e := decodeExhaustion(t, body); e.Error.Type != "rate_limit_error" {
			t.Errorf("body %s", body)
		}
		if up.count() != 1 || resp.Header.Get(hdrAttempts) != "0" {
			t.Errorf("upstream calls %d attempts %q, want 1 and 0", up.count(), resp.Header.Get(hdrAttempts))
		}
	}
	t.Run("only candidate, credential tpm", func(t *testing.T) {
		c := Credential{Name: "a", Type: domain.CredentialOpenAI, BaseURL: "http://x", APIKey: "sk-test-a-0123456789abcdef", TPM: 25}
		only(t, c, routesFor("gpt-4o", "a"), chatOK("hello"))
	})
	t.Run("only candidate, pair tpm", func(t *testing.T) {
		c := Credential{Name: "a", Type: domain.CredentialOpenAI, BaseURL: "http://x", APIKey: "sk-test-a-0123456789abcdef"}
		only(t, c, []Route{{Model: "gpt-4o", Credential: "a", TPM: 25}}, chatOK("hello"))
	})
	t.Run("only candidate, tokens from a stream", func(t *testing.T) {
		up := newUpstream(t, step{events: []string{chunk("hi"), usageChunk, "data: [DONE]\n\n"}})
		c := cred("a", up)
		c.TPM = 9
		f := newFixture(t, []Credential{c}, routesFor("gpt-4o", "a"), nil)
		if resp, _ := f.post("/v1/chat/completions", streamReq); resp.StatusCode != 200 {
			t.Fatalf("stream: status %d", resp.StatusCode)
		}
		f.out.wait(t, 1) // the stream's tokens are charged when it ends
		resp, _ := f.post("/v1/chat/completions", chatReq)
		if ra, _ := strconv.Atoi(resp.Header.Get("Retry-After")); resp.StatusCode != 429 || ra < 1 {
			t.Errorf("after a stream of 9 tokens with tpm 9: status %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	})
}

// envelopeFields decodes {"error":{...}} keeping which fields are present.
func TestOutcomeLatencyAndAttemptNumbers(t *testing.T) {
	var f *fixture
	adv := func(d time.Duration) func() { return func() { f.clock.Advance(d) } }
	a := newUpstream(t, step{status: 503, body: `{}`, before: adv(30 * time.Millisecond)})
	b := newUpstream(t, step{status: 429, body: `{}`, before: adv(45 * time.Millisecond)})
	c := newUpstream(t, step{status: 200, body: chatOK("hi"), before: adv(25 * time.Millisecond)})
	f = newFixture(t, []Credential{cred("a", a), cred("b", b), cred("c", c)}, routesFor("gpt-4o", "a", "b", "c"), nil)
	if resp, body := f.post("/v1/chat/completions", chatReq); resp.StatusCode != 200 {
		t.Fatalf("status %d %s", resp.StatusCode, body)
	}
	os := f.out.wait(t, 3)
	want := []struct {
		cred string
		ms   int64
	}{{"a", 30}, {"b", 45}, {"c", 25}}
	for i, o := range os {
		if o.Credential != want[i].cred || o.Attempt != i+1 || o.LatencyMS != want[i].ms || o.RequestID != os[0].RequestID || o.RequestID == "" {
			t.Errorf("outcome %d %+v, want credential %s attempt %d latency %d ms and one request id",
				i, o, want[i].cred, i+1, want[i].ms)
		}
	}
	if o := os[1]; o.RetryAfterMS != 0 || o.Class != domain.ClassRateLimited {
		t.Errorf("second outcome %+v", o)
	}
}

// On the real clock, the latency recorded is at least the upstream's delay.
func TestOutcomeLatencyOnTheRealClock(t *testing.T) {
	const delay = 30 * time.Millisecond
	a := newUpstream(t, step{status: 503, body: `{}`, before: func() { time.Sleep(delay) }})
	b := newUpstream(t)
	f := newFixture(t, []Credential{cred("a", a), cred("b", b)}, routesFor("gpt-4o", "a", "b"), func(d *Deps) { d.Clock = nil })
	if resp, _ := f.post("/v1/chat/completions", chatReq); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	os := f.out.wait(t, 2)
	if os[0].LatencyMS < delay.Milliseconds() || os[0].LatencyMS > 2000 || os[0].Attempt != 1 {
		t.Errorf("first outcome %+v, want latency >= %d ms", os[0], delay.Milliseconds())
	}
	if os[1].LatencyMS >= delay.Milliseconds() || os[1].Attempt != 2 {
		t.Errorf("second outcome %+v, want the fast hop's own latency and attempt 2", os[1])
	}
}

// A proxy credential re-learns its models every ProxyModelRefresh of the
// proxy's clock: a model the upstream lists later shows up in GET
// /v1/models and is served, without a manual refresh, once the refresh
// interval has passed, and not before.
func TestProxyCredentialRelearnsModelsPeriodically(t *testing.T) {
	const refresh = time.Minute
	rl := newRelay(t, `{"object":"list","data":[{"id":"m1"}]}`)
	// With no routes at all every credential serves every model; one
	// route makes the relay serve only what it lists.
	creds := []Credential{cred("a", newUpstream(t)), {Name: "relay", Type: domain.CredentialProxy, BaseURL: rl.srv.URL, APIKey: "relay-key-0123456789"}}
	f := newFixture(t, creds, routesFor("gpt-4o", "a"), func(d *Deps) { d.ProxyModelRefresh = refresh })
	f.p.Start(t.Context())
	// The relearning loop's ticker is the clock's only waiter.
	if err := f.clock.BlockUntilContext(testkit.Context(t), 1); err != nil {
		t.Fatalf("the relearning ticker was never started: %v", err)
	}
	listed := func() []string {
		resp, err := f.srv.Client().Get(f.srv.URL + "/v1/models")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var list struct {
			Data []struct{ ID string } `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
			t.Fatal(err)
		}
		ids := make([]string, 0, len(list.Data))
		for _, d := range list.Data {
			ids = append(ids, d.ID)
		}
		return ids
	}
	if got := listed(); !slices.Equal(got, []string{"gpt-4o", "m1"}) {
		t.Fatalf("models after start %v, want [gpt-4o m1]", got)
	}
	if resp, _ := f.post("/v1/chat/completions", `{"model":"m2"}`); resp.StatusCode != 404 {
		t.Fatalf("m2 before the relay lists it: status %d, want 404", resp.StatusCode)
	}
	rl.mu.Lock()
	rl.list = `{"object":"list","data":[{"id":"m1"},{"id":"m2"}]}`
	rl.mu.Unlock()
	f.clock.Advance(refresh - time.Second)
	if got := listed(); !slices.Equal(got, []string{"gpt-4o", "m1"}) {
		t.Fatalf("models before the refresh interval passed %v, want [gpt-4o m1]", got)
	}
	f.clock.Advance(time.Second)
	testkit.Eventually(t, "m2 in /v1/models", func() bool { return slices.Equal(listed(), []string{"gpt-4o", "m1", "m2"}) })
	if resp, body := f.post("/v1/chat/completions", `{"model":"m2"}`); resp.StatusCode != 200 {
		t.Errorf("m2 after it was learned: status %d %s", resp.StatusCode, body)
	}
	if got := rl.seenModels(); !slices.Equal(got, []string{"m2"}) {
		t.Errorf("relay was sent %v, want [m2]", got)
	}
}
