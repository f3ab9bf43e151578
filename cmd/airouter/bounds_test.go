package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/internal/testkit"
)

// nameUpstream answers a chat completion for any model, except 500 for
// model "bad-name".
func nameUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(string(b), `"model":"bad-name"`) {
			w.WriteHeader(500)
			fmt.Fprint(w, `{"error":{"message":"upstream says 500","type":"server_error"}}`)
			return
		}
		fmt.Fprint(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
	}))
	t.Cleanup(s.Close)
	return s
}

// namesConfig is a config that lists no models (cred-a and cred-b serve
// any name) on a file store, banning a pair after 3 failures.
func namesConfig(t *testing.T, store string, ups ...*httptest.Server) *config.Config {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "server:\n  master_key: %s\n  api_keys: [%s]\n  port: 8080\n", testMasterKey, testClientKey)
	fmt.Fprintf(&b, "events:\n  store_dir: %s\n  storage: file\n", store)
	b.WriteString("fail2ban:\n  max_attempts: 3\n  ban_duration: 1h\n")
	b.WriteString("credentials:\n")
	for i, u := range ups {
		fmt.Fprintf(&b, "  - name: cred-%c\n    type: openai\n    api_key: sk-upstream-secret-%d\n    base_url: %s/v1\n", 'a'+i, i, u.URL)
	}
	cfg, err := config.Parse([]byte(b.String()), nil)
	if err != nil {
		t.Fatalf("test config: %v\n%s", err, b.String())
	}
	return cfg
}

// sendNames sends one chat request on each client-chosen model name
// made-up-00000 .. made-up-<n-1>, eight at a time, and hands each answer to
// seen (nil ignores them).
func sendNames(t *testing.T, r *running, n int, seen func(i, code int, body []byte)) {
	t.Helper()
	var wg sync.WaitGroup
	work := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				code, body := chatModel(t, r, "/v1/chat/completions", fmt.Sprintf("made-up-%05d", i))
				if seen != nil {
					seen(i, code, body)
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
}

// catchUp returns once r's snapshot holds every event it has published.
func catchUp(t *testing.T, r *running) {
	t.Helper()
	if err := r.log.Flush(testkit.Context(t)); err != nil {
		t.Fatal(err)
	}
	if last, err := r.log.LastSeq(testkit.Context(t)); err != nil || r.live.WaitFor(testkit.Context(t), last) != nil {
		t.Fatalf("catch up with the log: %v", err)
	}
}

// 20,000 client-chosen model names through a real router whose config
// lists no models: the pairs the log keeps (and so the checkpoint), the
// /metrics lines and /health stay bounded, across a restart too; a name
// that fails on one credential is banned there and still banned after the
// restart; an admin ban on a name the log keeps (one of those used last)
// is accepted, on a name it dropped or never saw refused.
func TestManyClientNamesThroughARouterStayBounded(t *testing.T) {
	const names = 20000
	store := tempStore(t)
	up := nameUpstream(t)
	r := start(t, namesConfig(t, store, up, up))

	failed := make(chan string, 8)
	sendNames(t, r, names, func(i, code int, body []byte) {
		if code != 200 {
			select {
			case failed <- fmt.Sprintf("name %d: %d %s", i, code, body):
			default:
			}
		}
	})
	select {
	case msg := <-failed:
		t.Fatal(msg)
	default:
	}
	// The fold may be far behind 20,000 names on a loaded machine: catch
	// up first, so the wait below is for the ban alone.
	catchUp(t, r)
	for range 6 { // three failures on each credential: both are banned
		chatModel(t, r, "/v1/chat/completions", "bad-name")
	}
	testkit.Eventually(t, "bad-name banned on both credentials", func() bool {
		return blocked(r, "cred-a", "bad-name") && blocked(r, "cred-b", "bad-name")
	})
	catchUp(t, r)

	// Per credential at most 2,000 pair records (projections' maxPairs):
	// the quiet ones used last, and the banned one.
	const maxPairs = 2 * 2000
	check := func(when string, r *running) {
		t.Helper()
		if got := len(r.live.Load().Pairs()); got > maxPairs {
			t.Errorf("%s: the log keeps %d pairs for %d names, want at most %d", when, got, names, maxPairs)
		}
		_, _, metrics := r.do(t, "GET", "/metrics", "", nil)
		if lines := strings.Count(string(metrics), "\n"); lines > 6000 {
			t.Errorf("%s: /metrics has %d lines", when, lines)
		}
		_, _, hb := r.do(t, "GET", "/health", "", nil)
		if len(hb) > 512<<10 {
			t.Errorf("%s: /health is %d bytes", when, len(hb))
		}
		if !blocked(r, "cred-a", "bad-name") || !blocked(r, "cred-b", "bad-name") {
			t.Errorf("%s: bad-name is no longer banned", when)
		}
	}
	check("after the names", r)
	r.stop()

	r2 := start(t, namesConfig(t, store, up, up))
	check("after a restart", r2)
	_, data, ok, err := r2.log.LoadCheckpoint(testkit.Context(t))
	if err != nil || !ok {
		t.Fatalf("load the checkpoint: ok %v, %v", ok, err)
	}
	if len(data) > 512<<10 {
		t.Errorf("the checkpoint is %d bytes after %d names", len(data), names)
	}
	// The admin API's "the log names it" check still reads the kept records.
	for model, want := range map[string]int{"made-up-19999": 200, "made-up-00000": 404, "never-asked": 404} {
		code, _, body := r2.do(t, "POST", "/api/ban", testMasterKey, map[string]string{"credential": "cred-a", "model": model, "ttl": "1h"})
		if code != want {
			t.Errorf("admin ban of cred-a/%s: %d %s, want %d", model, code, body, want)
		}
	}
	_, _, metrics := r2.do(t, "GET", "/metrics", "", nil)
	t.Logf("%d names: %d pairs kept, checkpoint %d bytes, /metrics %d lines after the restart",
		names, len(r2.live.Load().Pairs()), len(data), strings.Count(string(metrics), "\n"))
}
