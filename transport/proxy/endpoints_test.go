package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/airouter/airouter/domain"
)

// Bodies a completions and a responses upstream answer with, with content
// and usage.
const (
	completionOK = `{"id":"cmpl-1","object":"text_completion","model":"up-model",` +
		`"choices":[{"index":0,"text":"hi there","finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`
	responseOK = `{"id":"resp_1","object":"response","status":"completed",` +
		`"output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hi"}]}],` +
		`"usage":{"input_tokens":3,"output_tokens":4,"total_tokens":7}}`
)

func completionChunk(text string) string {
	return sse(`{"id":"c","object":"text_completion","choices":[{"index":0,"text":"` + text + `"}]}`)
}

// /v1/completions and /v1/responses go through the same forwarding and
// failover as chat: the credential's key, the model rewrite, and a 503 that
// moves on to the next credential.
func TestCompletionsAndResponsesForwardAndFailOver(t *testing.T) {
	cases := []struct {
		path, model, upModel, body, ok string
		tokens                         int
	}{
		{"/v1/completions", "gpt-3.5-turbo-instruct", "instruct-0914",
			`{"model":"gpt-3.5-turbo-instruct","prompt":"say hi","max_tokens":5}`, completionOK, 3},
		{"/v1/responses", "gpt-4o", "gpt-4o-2024-08-06",
			`{"input":"say hi","model":"gpt-4o","store":false}`, responseOK, 7},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			a := newUpstream(t, step{status: 503, body: `{"error":{"message":"overloaded"}}`})
			b := newUpstream(t, step{status: 200, body: c.ok})
			ca, cb := cred("a", a), cred("b", b)
			routes := []Route{
				{Model: c.model, Credential: "a", UpstreamModel: c.upModel},
				{Model: c.model, Credential: "b", UpstreamModel: c.upModel},
			}
			f := newFixture(t, []Credential{ca, cb}, routes, nil)
			resp, got := f.do(t.Context(), c.path+"?v=1", c.body, "X-Custom", "kept")
			if resp.StatusCode != 200 || got != c.ok {
				t.Fatalf("status %d body %s, want b's answer unchanged", resp.StatusCode, got)
			}
			want := c.model + "=server_error; b/" + c.model + "=ok"
			if tr := resp.Header.Get(hdrTrail); tr != "a/"+want || resp.Header.Get(hdrAttempts) != "2" {
				t.Errorf("trail %q attempts %q, want a/%s and 2", tr, resp.Header.Get(hdrAttempts), want)
			}
			wantBody := strings.Replace(c.body, `"`+c.model+`"`, `"`+c.upModel+`"`, 1)
			for _, u := range []struct {
				up  *upstream
				key string
			}{{a, ca.APIKey}, {b, cb.APIKey}} {
				rs := u.up.requests()
				if len(rs) != 1 {
					t.Fatalf("upstream got %d requests, want 1", len(rs))
				}
				r := rs[0]
				if r.path != c.path || r.query != "v=1" {
					t.Errorf("upstream path %q query %q", r.path, r.query)
				}
				if got := r.header.Get("Authorization"); got != "Bearer "+u.key {
					t.Errorf("upstream Authorization %q, want the credential's key", got)
				}
				if r.header.Get("X-Custom") != "kept" {
					t.Errorf("client header not forwarded: %v", r.header)
				}
				if string(r.body) != wantBody {
					t.Errorf("upstream body %s, want %s", r.body, wantBody)
				}
			}
			os := f.out.wait(t, 2)
			if os[0].Credential != "a" || os[0].Status != 503 || os[0].Class != domain.ClassServerError ||
				os[1].Credential != "b" || os[1].Class != domain.ClassOK || os[1].Model != c.model {
				t.Errorf("outcomes %+v", os)
			}
			if _, tpm := f.p.Usage("b", c.model); tpm != c.tokens {
				t.Errorf("tpm %d, want %d from the response's usage", tpm, c.tokens)
			}
		})
	}
}

// A streamed /v1/completions fails over before its first byte and is then
// relayed event by event.
func TestCompletionsStreamRelaysSSE(t *testing.T) {
	release := make(chan struct{})
	usage := sse(`{"id":"c","object":"text_completion","choices":[],"usage":{"prompt_tokens":2,"completion_tokens":3,"total_tokens":5}}`)
	a := newUpstream(t, step{status: 503, body: `{"error":{"message":"overloaded"}}`})
	b := newUpstream(t, step{events: []string{completionChunk("Hel"), completionChunk("lo"), usage, "data: [DONE]\n\n"}, gate: release})
	routes := []Route{
		{Model: "gpt-3.5-turbo-instruct", Credential: "a", UpstreamModel: "instruct-0914"},
		{Model: "gpt-3.5-turbo-instruct", Credential: "b", UpstreamModel: "instruct-0914"},
	}
	f := newFixture(t, []Credential{cred("a", a), cred("b", b)}, routes, nil)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, f.srv.URL+"/v1/completions",
		strings.NewReader(`{"model":"gpt-3.5-turbo-instruct","prompt":"hi","stream":true}`))
	resp := f.openStream(t, req)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if tr := resp.Header.Get(hdrTrail); tr != "a/gpt-3.5-turbo-instruct=server_error; b/gpt-3.5-turbo-instruct=ok" {
		t.Errorf("trail %q", tr)
	}
	r := bufio.NewReader(resp.Body)
	// b holds the rest back until release: the first event arrives only
	// if the proxy flushed it.
	if ev := readEvent(t, r); ev != completionChunk("Hel") {
		t.Fatalf("first event %q", ev)
	}
	close(release)
	rest, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if string(rest) != completionChunk("lo")+usage+"data: [DONE]\n\n" {
		t.Errorf("rest of the stream %q", rest)
	}
	up := string(b.requests()[0].body)
	if !strings.Contains(up, `"model":"instruct-0914"`) || !strings.Contains(up, `"stream_options":{"include_usage":true}`) {
		t.Errorf("upstream body %s: want the rewritten model and include_usage", up)
	}
	if got := b.requests()[0].header.Get("Authorization"); got != "Bearer "+cred("b", b).APIKey {
		t.Errorf("upstream Authorization %q", got)
	}
	if o := f.out.wait(t, 2)[1]; o.Credential != "b" || o.Class != domain.ClassOK {
		t.Errorf("outcome %+v", o)
	}
	if _, tpm := f.p.Usage("b", "gpt-3.5-turbo-instruct"); tpm != 5 {
		t.Errorf("tpm %d, want the stream's 5 tokens", tpm)
	}
}

// countingServer is an upstream that counts the TCP connections it
// accepts; it answers chat, or a short stream when asked for one.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, chunk("hi")+usageChunk+"data: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, chatOK("hello"))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func credAt(name, base string) Credential {
	return Credential{Name: name, Type: domain.CredentialOpenAI, BaseURL: base + "/v1", APIKey: "sk-test-" + name + "-0123456789abcdef"}
}

// One pooled transport: sequential requests to one upstream reuse one TCP
// connection, across credentials that share the host and across a stream.
func TestUpstreamConnectionIsReused(t *testing.T) {
	t.Run("one credential", func(t *testing.T) {
		srv, conns := countingServer(t)
		f := newFixture(t, []Credential{credAt("a", srv.URL)}, routesFor("gpt-4o", "a"), nil)
		for i := range 2 {
			if resp, body := f.post("/v1/chat/completions", chatReq); resp.StatusCode != 200 {
				t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
			}
		}
		if n := conns.Load(); n != 1 {
			t.Errorf("upstream accepted %d connections for 2 sequential requests, want 1", n)
		}
	})
	t.Run("two credentials on one host and a stream", func(t *testing.T) {
		srv, conns := countingServer(t)
		f := newFixture(t, []Credential{credAt("a", srv.URL), credAt("b", srv.URL)}, routesFor("gpt-4o", "a", "b"), nil)
		for i, body := range []string{chatReq, chatReq, streamReq, chatReq} {
			resp, got := f.post("/v1/chat/completions", body)
			if resp.StatusCode != 200 || got == "" {
				t.Fatalf("request %d: %d %s", i, resp.StatusCode, got)
			}
		}
		if tr := f.out.wait(t, 4); tr[0].Credential == tr[1].Credential {
			t.Fatalf("round robin did not alternate: %+v", tr)
		}
		if n := conns.Load(); n != 1 {
			t.Errorf("upstream accepted %d connections for 4 sequential requests, want 1", n)
		}
	})
}

// Tokens charged from a response's usage count against tpm: a credential
// over it is skipped, and when it is the only candidate the client gets 429
// with Retry-After.
