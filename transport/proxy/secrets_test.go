package proxy

import (
	"bufio"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// Keys no redact pattern recognises, so only the configured-key masking
// can keep them out of an answer.
const (
	keyA = "plainkey-for-a-1111"
	keyB = "b key with space 2222"
	keyX = "plainkey-for-x-7777"
)

func assertNoKeys(t *testing.T, where, s string, secrets ...string) {
	t.Helper()
	for _, k := range append([]string{keyA, keyB, keyX}, secrets...) {
		if strings.Contains(s, k) {
			t.Errorf("%s contains %q:\n%s", where, k, s)
		}
	}
}

// keyedCreds are a (primary) and b (fallback) for gpt-4o and x, which
// serves another model and is never tried here.
func keyedCreds(a, b, x *upstream) ([]Credential, []Route) {
	ca, cb, cx := cred("a", a), cred("b", b), cred("x", x)
	ca.APIKey, cb.APIKey, cx.APIKey = keyA, keyB, keyX
	cb.IsFallback = true
	return []Credential{ca, cb, cx}, append(routesFor("gpt-4o", "a", "b"), Route{Model: "other", Credential: "x"})
}

func TestPassThroughMasksEveryConfiguredKey(t *testing.T) {
	a := newUpstream(t, step{status: 500,
		body: `{"error":{"message":"failed for ops@example.com with ` + keyX + ` and ` + keyA + `"}}`})
	b := newUpstream(t, step{status: 400,
		header: map[string]string{
			"X-Upstream-Debug":               "sent " + keyX,
			"X-Echo":                         keyB,
			"X-Contact":                      "ops@example.com",
			"X-Ratelimit-Remaining-Requests": "7",
		},
		body: `{"error":{"message":"keys ` + keyB + ` and ` + keyX + ` invalid for ops@example.com"}}`})
	creds, routes := keyedCreds(a, b, newUpstream(t))
	f := newFixture(t, creds, routes, nil)
	f.set.ExposeDetailHeaders = true

	resp, body := f.post("/v1/chat/completions", chatReq)
	if resp.StatusCode != 400 {
		t.Fatalf("status %d body %s, want b's 400 passed through", resp.StatusCode, body)
	}
	// The body passes through but for the keys: the e-mail address is the
	// upstream's text, not ours.
	if want := `{"error":{"message":"keys [redacted] and [redacted] invalid for ops@example.com"}}`; body != want {
		t.Errorf("body\n%s\nwant\n%s", body, want)
	}
	assertNoKeys(t, "response headers", headerText(resp.Header), "ops@example.com")
	for _, k := range []string{"X-Upstream-Debug", "X-Echo", "X-Contact"} {
		if v, ok := resp.Header[k]; ok {
			t.Errorf("%s relayed: %q", k, v)
		}
	}
	if got := resp.Header.Get("X-Ratelimit-Remaining-Requests"); got != "7" {
		t.Errorf("X-Ratelimit-Remaining-Requests = %q, want the upstream's 7", got)
	}
	detail := resp.Header.Get(hdrDetail)
	if !strings.HasPrefix(detail, "a/gpt-4o=server_error/500 t=0+0ms msg=failed for [redacted-email] with [redacted] and [redacted]") {
		t.Errorf("detail header %q", detail)
	}
	assertNoKeys(t, "logs", f.logs.String(), "ops@example.com")
}

func TestStreamMasksAKeySplitBetweenReads(t *testing.T) {
	gate := make(chan struct{})
	half := len(keyX) / 2
	up := newUpstream(t, step{gate: gate, events: []string{
		chunk("Hello") + `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"your key is ` + keyX[:half],
		keyX[half:] + `, and ` + keyA + `"}}]}` + "\n\n",
		sse("[DONE]"),
	}})
	creds, routes := keyedCreds(up, newUpstream(t), newUpstream(t))
	f := newFixture(t, creds, routes, nil)

	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, f.srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+masterKey)
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The upstream waits on the gate with half of x's key sent: the client
	// has everything before it, and none of it.
	r := bufio.NewReader(resp.Body)
	var got strings.Builder
	for !strings.HasSuffix(got.String(), "your key is ") {
		c, err := r.ReadByte()
		if err != nil {
			t.Fatalf("stream ended after %q: %v", got.String(), err)
		}
		got.WriteByte(c)
	}
	close(gate)
	rest, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	got.Write(rest)
	want := chunk("Hello") + `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"your key is [redacted], and [redacted]"}}]}` +
		"\n\n" + sse("[DONE]")
	if got.String() != want {
		t.Errorf("stream\n%q\nwant\n%q", got.String(), want)
	}
	assertNoKeys(t, "stream", got.String())
	assertNoKeys(t, "stream headers", headerText(resp.Header))
}

func TestUpstreamHeadersAboutItselfAreNotRelayed(t *testing.T) {
	dropped := []string{"Set-Cookie", "Server", "X-Powered-By", "Via", "Alt-Svc", "Openai-Organization",
		"Openai-Project", "Anthropic-Organization-Id", "Cf-Ray", "Cf-Cache-Status", "Strict-Transport-Security",
		"Nel", "Report-To", "X-Envoy-Upstream-Service-Time", "X-Credential-Name", "X-Debug-Token"}
	kept := map[string]string{
		"X-Ratelimit-Remaining-Tokens":           "29999990",
		"X-Ratelimit-Reset-Requests":             "6ms",
		"Anthropic-Ratelimit-Requests-Remaining": "49",
		"Retry-After":                            "3",
		"Openai-Processing-Ms":                   "312",
		"X-Request-Id":                           "req_0123456789abcdef0123456789abcdef",
		"X-Custom":                               "kept",
	}
	header := map[string]string{"X-Powered-By": "Express", "Via": "1.1 google", "Nel": `{"report_to":"cf-nel"}`,
		"Report-To": `{"group":"cf-nel"}`, "Anthropic-Organization-Id": "org-uuid", "X-Envoy-Upstream-Service-Time": "12",
		"X-Credential-Name": "downstream-cred", "X-Debug-Token": "sk-live-0123456789abcdefghij",
		"Set-Cookie": "__cf_bm=abcdefghijklmnopqrstuvwxyz0123456789; path=/; HttpOnly; Secure", "Server": "cloudflare",
		"Alt-Svc": `h3=":443"; ma=86400`, "Strict-Transport-Security": "max-age=31536000", "Openai-Organization": "org-x",
		"Openai-Project": "proj_x", "Cf-Ray": "8f0123456789abcd-AMS", "Cf-Cache-Status": "DYNAMIC"}
	for k, v := range kept {
		header[k] = v
	}
	for _, stream := range []bool{false, true} {
		s := step{status: 200, header: header, body: chatOK("hi")}
		if stream {
			s.events = []string{chunk("hi"), sse("[DONE]")}
		}
		up := newUpstream(t, s)
		f := newFixture(t, []Credential{cred("a", up)}, routesFor("gpt-4o", "a"), nil)
		resp, body := f.post("/v1/chat/completions", chatReq)
		if resp.StatusCode != 200 || body == "" {
			t.Fatalf("stream=%v: status %d body %q", stream, resp.StatusCode, body)
		}
		for _, k := range dropped {
			if v, ok := resp.Header[k]; ok {
				t.Errorf("stream=%v: %s relayed: %q", stream, k, v)
			}
		}
		for k, v := range kept {
			if got := resp.Header.Get(k); got != v {
				t.Errorf("stream=%v: %s = %q, want %q", stream, k, got, v)
			}
		}
		if ct := resp.Header.Get("Content-Type"); ct == "" {
			t.Errorf("stream=%v: no Content-Type", stream)
		}
	}
}

func TestSecretsMaskAndHold(t *testing.T) {
	s := newSecrets("abcdefgh12", "abcdefgh1234", "with space key!", "short", "abcdefgh12", "")
	if got := string(s.mask([]byte("x abcdefgh1234 y abcdefgh12 z with space key! short"))); got != "x [redacted] y [redacted] z [redacted] short" {
		t.Errorf("mask = %q", got)
	}
	if got := s.maskString("key=abcdefgh12,"); got != "key=[redacted]," {
		t.Errorf("maskString = %q", got)
	}
	// A whole key is held back too when a longer key starts with it.
	for chunk, want := range map[string]int{"data abcdef": 6, "data\n\n": 0, "xyz with sp": 7, "abcdefgh123": 11, "": 0, "x abcdefgh12": 10, "x abcdefgh1234": 0} {
		if got := s.held([]byte(chunk)); got != want {
			t.Errorf("held(%q) = %d, want %d", chunk, got, want)
		}
	}
	clean := []byte(chatOK("Hello there, how can I help you today?"))
	if n := testing.AllocsPerRun(100, func() { _ = s.mask(clean) }); n != 0 {
		t.Errorf("masking a body with no key allocates %v times", n)
	}
	var none *secrets
	if got := string(none.mask([]byte("abcdefgh12"))); got != "abcdefgh12" || none.held([]byte("a")) != 0 {
		t.Errorf("nil secrets changed %q", got)
	}
}

// TestSecretsFoundMatchesContains checks the skipping scan against a plain
// search of every key, on random texts made of key pieces and separators.
func TestSecretsFoundMatchesContains(t *testing.T) {
	keys := []string{"sk-abc123XYZ", "sk-abc123XYZ-longer.key", "k3y/with+slash=", "has space key"}
	s := newSecrets(keys...)
	pieces := []string{"sk-", "abc", "123", "XYZ", "-longer", ".key", "k3y", "/with", "+slash=", "has", " ", "space", "key",
		"\n", "\"", ":", ",", "x", "data: ", "\n\n"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		text := b.String()
		want := false
		for _, k := range keys {
			want = want || strings.Contains(text, k)
		}
		if got := s.found(text); got != want {
			t.Fatalf("found(%q) = %v, want %v", text, got, want)
		}
		if masked := string(s.mask([]byte(text))); want == (masked == text) || s.found(masked) {
			t.Fatalf("mask(%q) = %q", text, masked)
		}
	}
}

func TestOKBodyMasksAnotherCredentialsKey(t *testing.T) {
	a := newUpstream(t, step{status: 200, body: chatOK("your keys: " + keyX + ", " + keyA)})
	creds, routes := keyedCreds(a, newUpstream(t), newUpstream(t))
	f := newFixture(t, creds, routes, nil)
	resp, body := f.post("/v1/chat/completions", chatReq)
	if want := chatOK("your keys: [redacted], [redacted]"); resp.StatusCode != 200 || body != want {
		t.Errorf("status %d body\n%s\nwant\n%s", resp.StatusCode, body, want)
	}
	if got := resp.Header.Get("Content-Length"); got != strconv.Itoa(len(body)) {
		t.Errorf("Content-Length %s for a body of %d bytes", got, len(body))
	}
}
