package bareproxy

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// The relay passes a client error through as the upstream sent it (status,
// headers, body), with the request's path, query and body, and without
// hop-by-hop headers either way.
func TestRelayPassesAnswersThrough(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/chat/completions" || r.URL.RawQuery != "a=1" || string(body) != `{"model":"m"}` || r.Header.Get("Te") != "" {
			t.Errorf("upstream got %s %s?%s %q, Te %q", r.Method, r.URL.Path, r.URL.RawQuery, body, r.Header.Get("Te"))
		}
		w.Header().Set("X-Upstream", "yes")
		w.Header().Set("Keep-Alive", "timeout=5")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":{"message":"bad"}}`)
	}))
	defer up.Close()
	relay := httptest.NewServer(NewRelay(mustURL(t, up.URL)))
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

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
