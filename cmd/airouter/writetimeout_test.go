package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// server.write_timeout bounds each write to the client, not the request: a
// stream that runs past it, and an answer that takes longer than it to
// come from upstream, both reach the client whole.
func TestWriteTimeoutDoesNotCutLongResponses(t *testing.T) {
	const events = 8
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if !r.URL.Query().Has("stream") { // the proxy passes the query string on
			time.Sleep(700 * time.Millisecond)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"late"},"finish_reason":"stop"}]}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for i := range events {
			fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"w%d \"}}]}\n\n", i)
			_ = rc.Flush()
			time.Sleep(100 * time.Millisecond)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
		_ = rc.Flush()
		// Some upstreams hold the connection a while after [DONE]; the
		// end of the response still reaches the client.
		time.Sleep(500 * time.Millisecond)
	}))
	t.Cleanup(slow.Close)
	up := &upstream{Server: slow}
	cfg := testConfig(t, t.TempDir(), "memory", "", up)
	cfg.Server.WriteTimeout = 400 * time.Millisecond
	r := start(t, cfg)

	// A stream of ~1.3 s through a 400 ms write timeout.
	req, _ := http.NewRequest(http.MethodPost, r.url+"/v1/chat/completions?stream",
		strings.NewReader(`{"model":"gpt-test","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+testMasterKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	done := false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		switch line := sc.Text(); {
		case strings.HasPrefix(line, "data: [DONE]"):
			done = true
		case strings.HasPrefix(line, "data: "):
			got++
		}
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || got != events || !done || sc.Err() != nil {
		t.Fatalf("stream: status %d, %d of %d events, [DONE] %v (err %v)", resp.StatusCode, got, events, done, sc.Err())
	}

	// An answer that comes after 700 ms.
	status, _, body := chat(t, r)
	if status != http.StatusOK || !strings.Contains(string(body), "late") {
		t.Fatalf("slow answer = %d %s", status, body)
	}
}
