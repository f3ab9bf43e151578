package proxy

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// newResettingServer resets the connection as soon as a request's headers
// are in, while the proxy is still sending the body.
func newResettingServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		_ = conn.Close()
	}))
	t.Cleanup(srv.Close)
	return srv
}

// An attempt that fails while the upstream is still receiving the body is
// marked BodyUnsent; one that fails after the whole body arrived, or that
// never connected, is not.
func TestOutcomeMarksAFailureWhileTheBodyIsSent(t *testing.T) {
	big := `{"model":"gpt-4o","messages":[{"role":"user","content":"` + strings.Repeat("x", 8<<20) + `"}]}`
	// Port 1 of loopback, where nothing listens, as the other tests of a
	// refused connection use: a closed test server's port may be taken by
	// another package's test running meanwhile.
	const refusedURL = "http://127.0.0.1:1"
	for _, tc := range []struct {
		name string
		url  func(t *testing.T) string
		body string
		want bool
	}{
		{"reset while the body is sent", func(t *testing.T) string { return newResettingServer(t).URL }, big, true},
		{"dropped after the whole body arrived", func(t *testing.T) string {
			return newUpstream(t, step{drop: true}).url()
		}, chatReq, false},
		{"connection refused", func(*testing.T) string { return refusedURL }, chatReq, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Credential{Name: "a", Type: "openai", BaseURL: tc.url(t) + "/v1", APIKey: "sk-test-a-0123456789abcdef"}
			f := newFixture(t, []Credential{c}, routesFor("gpt-4o", "a"), nil)
			if resp, body := f.post("/v1/chat/completions", tc.body); resp.StatusCode != http.StatusBadGateway {
				t.Fatalf("status %d %s, want 502", resp.StatusCode, body)
			}
			o := f.out.wait(t, 1)[0]
			if o.Class != "connection" || o.BodyUnsent != tc.want {
				t.Fatalf("outcome %+v: want class connection, body_unsent %t", o, tc.want)
			}
		})
	}
}
