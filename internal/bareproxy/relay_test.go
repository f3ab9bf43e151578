package bareproxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// The relay passes a client error through as the upstream sent it (status,
// headers, body), with the request's path after the upstream's, both
// queries, the body and the upstream's Host, and without hop-by-hop
// headers either way.
func TestRelayPassesAnswersThrough(t *testing.T) {
	var upHost string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/base/v1/chat/completions" || r.URL.RawQuery != "k=v&a=1" || string(body) != `{"model":"m"}` ||
			r.Header.Get("Te") != "" || r.Host != upHost {
			t.Errorf("upstream got %s %s?%s %q, Host %q, Te %q", r.Method, r.URL.Path, r.URL.RawQuery, body, r.Host, r.Header.Get("Te"))
		}
		w.Header().Set("X-Upstream", "yes")
		w.Header().Set("Keep-Alive", "timeout=5")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":{"message":"bad"}}`)
	}))
	defer up.Close()
	upHost = mustURL(t, up.URL).Host
	relay := httptest.NewServer(NewRelay(mustURL(t, up.URL+"/base/?k=v")))
	defer relay.Close()

	req, _ := http.NewRequest(http.MethodPost, relay.URL+"/v1/chat/completions?a=1", strings.NewReader(`{"model":"m"}`))
	req.Header.Set("Te", "trailers")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || string(body) != `{"error":{"message":"bad"}}` ||
		resp.Header.Get("X-Upstream") != "yes" || resp.Header.Get("Keep-Alive") != "" {
		t.Errorf("got %d %q, headers %v", resp.StatusCode, body, resp.Header)
	}
}

// A stream's chunks reach the client as the upstream sends them: the
// upstream sends its second chunk only once the client has read the first,
// so a relay that held chunks back would never finish.
func TestRelayFlushesEveryChunk(t *testing.T) {
	read := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-read:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, "data: two\n\n")
	}))
	defer up.Close()
	relay := httptest.NewServer(NewRelay(mustURL(t, up.URL)))
	defer relay.Close()

	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Post(relay.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "data: one\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	close(read)
	rest, err := io.ReadAll(br)
	if err != nil || string(rest) != "\ndata: two\n\n" {
		t.Errorf("rest %q, %v", rest, err)
	}
}

// An upstream that cannot be reached is a 502; one that cuts its answer
// short cuts the client's too, so a cut stream does not read as a whole
// one.
func TestRelayFailures(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	_ = ln.Close()
	relay := httptest.NewServer(NewRelay(mustURL(t, down)))
	defer relay.Close()
	resp, err := http.Post(relay.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("unreachable upstream: %d, want 502", resp.StatusCode)
	}

	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	}))
	defer cut.Close()
	relay2 := httptest.NewServer(NewRelay(mustURL(t, cut.URL)))
	defer relay2.Close()
	resp, err = http.Post(relay2.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err == nil || string(got) != "data: one\n\n" {
		t.Errorf("cut stream: read %q, %v; want the first chunk and an error", got, err)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
