package proxy

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/airouter/airouter/domain"
)

// BenchmarkForward is one request through the proxy's handler to a
// 127.0.0.1 upstream that answers like OpenAI (its usual headers, a body
// with no key in it): the common path the pass-through masking must keep
// cheap, with ten configured credentials.
func BenchmarkForward(b *testing.B) {
	for _, mode := range []string{"json", "stream"} {
		b.Run(mode, func(b *testing.B) {
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				benchUpstreamHeaders(w.Header())
				if mode == "stream" {
					w.Header().Set("Content-Type", "text/event-stream")
					for _, word := range []string{"Hello", " there,", " how", " can", " I", " help?"} {
						_, _ = io.WriteString(w, chunk(word))
					}
					_, _ = io.WriteString(w, sse("[DONE]"))
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, chatOK("Hello there, how can I help you today?"))
			}))
			b.Cleanup(up.Close)
			p := benchProxy(b, up.URL)
			benchChats(b, p.Handler())
		})
	}
}

// benchChats sends one chat completion for gpt-4o to h each b.Loop turn,
// reporting allocations, and fails on any status but 200.
func benchChats(b *testing.B, h http.Handler) {
	b.Helper()
	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+masterKey)
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}

// benchUpstreamHeaders are the headers an OpenAI answer carries.
func benchUpstreamHeaders(h http.Header) {
	h.Set("Openai-Organization", "org-bench")
	h.Set("Openai-Processing-Ms", "312")
	h.Set("Openai-Project", "proj_bench")
	h.Set("Openai-Version", "2020-10-01")
	h.Set("X-Ratelimit-Limit-Requests", "10000")
	h.Set("X-Ratelimit-Limit-Tokens", "30000000")
	h.Set("X-Ratelimit-Remaining-Requests", "9999")
	h.Set("X-Ratelimit-Remaining-Tokens", "29999990")
	h.Set("X-Ratelimit-Reset-Requests", "6ms")
	h.Set("X-Ratelimit-Reset-Tokens", "0s")
	h.Set("X-Request-Id", "req_0123456789abcdef0123456789abcdef")
	h.Set("Strict-Transport-Security", "max-age=31536000; includeSubDomains; preload")
	h.Set("Cf-Cache-Status", "DYNAMIC")
	h.Add("Set-Cookie", "__cf_bm=abcdefghijklmnopqrstuvwxyz0123456789; path=/; expires=Tue, 01-Dec-26 13:00:00 GMT; domain=.api.openai.com; HttpOnly; Secure; SameSite=None")
	h.Add("Set-Cookie", "_cfuvid=abcdefghijklmnopqrstuvwxyz0123456789-1700000000000-0.0.1.1-604800000; path=/; domain=.api.openai.com; HttpOnly; Secure; SameSite=None")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Server", "cloudflare")
	h.Set("Cf-Ray", "8f0123456789abcd-AMS")
	h.Set("Alt-Svc", `h3=":443"; ma=86400`)
}

// BenchmarkMask is the pass-through masking alone on the common path,
// ten configured keys and none in the answer: a 2xx body, a stream
// chunk, and an OpenAI answer's headers.
func BenchmarkMask(b *testing.B) {
	keys := make([]string, 10)
	for i := range keys {
		keys[i] = fmt.Sprintf("sk-proj-bench%d-0123456789abcdefABCDEF", i)
	}
	s := newSecrets(keys...)
	body := []byte(chatOK("Hello there, how can I help you today? Here is a longer answer with some words in it."))
	ch := []byte(chunk(" there,"))
	b.Run("body", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = s.mask(body)
		}
	})
	b.Run("chunk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = s.mask(ch[:len(ch)-s.held(ch)])
		}
	})
	b.Run("headers", func(b *testing.B) {
		src := http.Header{}
		benchUpstreamHeaders(src)
		src.Set("Content-Type", "application/json")
		b.ReportAllocs()
		for b.Loop() {
			copyResponseHeader(make(http.Header, 24), src, s)
		}
	})
}

// benchProxy is a proxy of ten OpenAI credentials on the upstream at url,
// closed when b ends.
func benchProxy(b testing.TB, url string) *Proxy {
	b.Helper()
	creds := make([]Credential, 10)
	for i := range creds {
		creds[i] = Credential{Name: fmt.Sprintf("c%d", i), Type: domain.CredentialOpenAI,
			BaseURL: url + "/v1", APIKey: fmt.Sprintf("sk-proj-bench%d-0123456789abcdefABCDEF", i)}
	}
	p, err := New(Deps{Credentials: creds, MasterKey: masterKey})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Close)
	return p
}
