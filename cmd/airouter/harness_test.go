package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/internal/testkit"
)

const testMasterKey = "sk-test-master-0123456789"

// upstream is a fake OpenAI-compatible server: it answers chat completions
// with status() (200 gives a real completion) and counts its calls.
type upstream struct {
	*httptest.Server
	calls  atomic.Int64
	status atomic.Int64
}

func newUpstream(t testing.TB, status int) *upstream {
	t.Helper()
	u := &upstream{}
	u.status.Store(int64(status))
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.calls.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		st := int(u.status.Load())
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(st)
		if st != http.StatusOK {
			fmt.Fprintf(w, `{"error":{"message":"upstream says %d","type":"server_error"}}`, st)
			return
		}
		fmt.Fprint(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
	}))
	t.Cleanup(u.Close)
	return u
}

// testConfig writes a config with one credential per upstream, all serving
// model "gpt-test", and parses it.
func testConfig(t *testing.T, storeDir, storage string, extra string, ups ...*upstream) *config.Config {
	t.Helper()
	return buildConfig(t, fmt.Sprintf("events:\n  store_dir: %s\n  storage: %s\n", storeDir, storage), extra, ups...)
}

// buildConfig is the test config around an events section: one openai
// credential per upstream (cred-a, cred-b, ...), all serving "gpt-test",
// then extra top-level YAML.
func buildConfig(t testing.TB, events, extra string, ups ...*upstream) *config.Config {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "server:\n  master_key: %s\n  port: 8080\n  shutdown_delay: 0s\n", testMasterKey)
	b.WriteString(events)
	b.WriteString("credentials:\n")
	for i, u := range ups {
		fmt.Fprintf(&b, "  - name: cred-%c\n    type: openai\n    api_key: sk-upstream-secret-%d\n    base_url: %s/v1\n", 'a'+i, i, u.URL)
	}
	b.WriteString("models:\n  - name: gpt-test\n")
	b.WriteString(extra)
	cfg, err := config.Parse([]byte(b.String()), nil)
	if err != nil {
		t.Fatalf("test config: %v\n%s", err, b.String())
	}
	return cfg
}

// running is a router serving HTTP on 127.0.0.1.
type running struct {
	*router
	url    string
	cancel context.CancelFunc
	done   chan error
}

func start(t *testing.T, cfg *config.Config) *running {
	t.Helper()
	return startOn(t, cfg, clockwork.NewRealClock())
}

// startOn is start with the router (decision engine, proxy and admin API)
// on clock.
func startOn(t *testing.T, cfg *config.Config, clock clockwork.Clock) *running {
	t.Helper()
	rt, err := startRouterOn(context.Background(), cfg, testkit.Logger(t, hclog.Info), clock)
	if err != nil {
		t.Fatalf("start router: %v", err)
	}
	return serveStarted(t, rt)
}

// stop shuts the router down as a signal would, once.
func (r *running) stop() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	if err := <-r.done; err != nil {
		panic(fmt.Sprintf("router shutdown: %v", err))
	}
}

func (r *running) do(t *testing.T, method, path, key string, body any) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, r.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, out
}

func chat(t *testing.T, r *running) (int, http.Header, []byte) {
	return r.do(t, "POST", "/v1/chat/completions", testMasterKey, map[string]any{
		"model":    "gpt-test",
		"messages": []map[string]string{{"role": "user", "content": "hi"}},
	})
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func tempStore(t *testing.T) string { return filepath.Join(t.TempDir(), "data") }

// grepLines returns the lines of s that contain sub, for failure messages.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
