package proxy

import (
	"net/http"
	"strings"
	"testing"

	"github.com/airouter/airouter/domain"
)

// secrets that must never reach a client, a header or a log line.
var testSecrets = []string{"sk-test-", "ops@example.com", "abcdefghijklmnopqrstu", "supersecretvalue123", masterKey}

func assertClean(t *testing.T, where, s string) {
	t.Helper()
	for _, secret := range testSecrets {
		if strings.Contains(s, secret) {
			t.Errorf("%s contains %q:\n%s", where, secret, s)
		}
	}
}

func headerText(h http.Header) string {
	var b strings.Builder
	for k, vv := range h {
		b.WriteString(k + ": " + strings.Join(vv, ",") + "\n")
	}
	return b.String()
}

func TestDetailHeadersAndBodiesAreRedacted(t *testing.T) {
	a := newUpstream(t, step{status: 401, body: `{"error":{"message":"Incorrect API key provided: sk-test-a-0123456789abcdef. ` +
		`Contact ops@example.com; Authorization: Bearer abcdefghijklmnopqrstu"}}`})
	b := newUpstream(t, step{status: 500, body: `{"error":{"message":"upstream token=supersecretvalue123 failed"}}`})
	f := newFixture(t, []Credential{cred("a", a), cred("b", b)}, routesFor("gpt-4o", "a", "b"), nil)
	f.set.ExposeDetailHeaders = true
	resp, body := f.post("/v1/chat/completions", chatReq)
	if resp.StatusCode != 502 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	detail := resp.Header.Get(hdrDetail)
	if !strings.HasPrefix(detail, "a/gpt-4o=auth/401 t=0+0ms msg=Incorrect API key provided: [redacted") ||
		!strings.Contains(detail, "; b/gpt-4o=server_error/500 t=0+0ms msg=upstream token=[redacted] failed") {
		t.Errorf("detail header %q", detail)
	}
	assertClean(t, "response headers", headerText(resp.Header))
	assertClean(t, "response body", body)
	assertClean(t, "logs", f.logs.String())
	if !strings.Contains(f.logs.String(), "request exhausted its candidates") {
		t.Errorf("the exhaustion was not logged:\n%s", f.logs.String())
	}

	// Without the setting there is no detail header.
	f.set.ExposeDetailHeaders = false
	a.setScript(step{status: 401, body: `{}`})
	if resp, _ := f.post("/v1/chat/completions", chatReq); resp.Header.Get(hdrDetail) != "" {
		t.Errorf("detail header without expose_detail_headers: %q", resp.Header.Get(hdrDetail))
	}
}

func TestPassedThroughBodyNeverEchoesTheCredentialKey(t *testing.T) {
	a := newUpstream(t, step{status: 400, body: `{"error":{"message":"bad request for key sk-test-a-0123456789abcdef"}}`})
	f := newFixture(t, []Credential{cred("a", a)}, routesFor("gpt-4o", "a"), nil)
	resp, body := f.post("/v1/chat/completions", chatReq)
	if resp.StatusCode != 400 || body != `{"error":{"message":"bad request for key [redacted]"}}` {
		t.Errorf("status %d body %s", resp.StatusCode, body)
	}
}

func TestTrailHeaderIsSafeForAnyName(t *testing.T) {
	up := newUpstream(t)
	// Credential names are tokens (domain.CheckCredentialName); a model
	// name is whatever the config or a client says.
	c := cred("cred-a", up)
	c.APIKey = "sk-test-clean-0123456789"
	model := "café\r\nX-Evil: 1"
	f := newFixture(t, []Credential{c}, routesFor(model, c.Name), nil)
	resp, _ := f.post("/v1/chat/completions", `{"model":"café\r\nX-Evil: 1","messages":[{"role":"user","content":"hi"}]}`)
	if got := resp.Header.Get(hdrTrail); got != "cred-a/caf%C3%A9%0D%0AX-Evil: 1=ok" || resp.Header.Get("X-Evil") != "" {
		t.Errorf("trail %q", got)
	}
}

func TestTrailHeaderIsCapped(t *testing.T) {
	hops := make([]hop, 200)
	c := &candidate{label: strings.Repeat("x", 30) + "/gpt-4o"}
	for i := range hops {
		hops[i] = hop{cand: c, class: "rate_limited"}
	}
	h := http.Header{}
	setFallbackHeaders(h, hops, true)
	trail := h.Get(hdrTrail)
	if len(trail) > maxTrailHeader || !strings.HasSuffix(trail, " more") {
		t.Errorf("trail of %d bytes ending %q", len(trail), trail[max(0, len(trail)-20):])
	}
	if h.Get(hdrAttempts) != "200" || len(h.Get(hdrDetail)) > maxDetailHeader {
		t.Errorf("attempts %q detail %d bytes", h.Get(hdrAttempts), len(h.Get(hdrDetail)))
	}
}

func TestUpstreamHeaderDropsConnectionListedHeaders(t *testing.T) {
	in := http.Header{
		"Connection":     {"keep-alive, X-Secret-Hop"},
		"X-Secret-Hop":   {"1"},
		"X-Api-Key":      {masterKey},
		"Authorization":  {"Bearer " + masterKey},
		"Te":             {"trailers"},
		"Anthropic-Beta": {"tools"},
	}
	cs, err := newCredState(0, Credential{Name: "a", Type: domain.CredentialOpenAI, BaseURL: "http://h", APIKey: "sk-test-a-0123456789abcdef"}, &usage{})
	if err != nil {
		t.Fatal(err)
	}
	out := upstreamHeader(in, cs, true)
	for _, k := range []string{"Connection", "X-Secret-Hop", "X-Api-Key", "Te"} {
		if _, ok := out[k]; ok {
			t.Errorf("%s forwarded", k)
		}
	}
	if out.Get("Authorization") != "Bearer sk-test-a-0123456789abcdef" || out.Get("Anthropic-Beta") != "tools" {
		t.Errorf("headers %v", out)
	}
}
