package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/internal/testkit"
)

// get answers a GET of url with its status and body; status 0 when the
// connection fails.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func listenLoopback(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// serve listens before the router starts: while start is held, /livez is
// 200, /readyz and every other path 503; once the router has caught up,
// /readyz is 200 and requests are proxied.
func TestReadyzIs503UntilCaughtUp(t *testing.T) {
	up := newUpstream(t, 200)
	cfg := testConfig(t, tempStore(t), "file", "", up)
	logger := testkit.Logger(t, hclog.Info)
	ln := listenLoopback(t)
	base := "http://" + ln.Addr().String()
	release := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serveProcess(ctx, cfg.Server, logger, ln, func(ctx context.Context) (*router, error) {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return startRouterOn(ctx, cfg, logger, clockwork.NewRealClock())
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := testkit.Receive(t, "serve to return", done); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("serve: %v", err)
		}
	})

	if st, body := get(t, base+"/livez"); st != 200 || !strings.Contains(body, `"starting"`) {
		t.Fatalf("/livez while starting = %d %s", st, body)
	}
	if st, body := get(t, base+"/readyz"); st != 503 || !strings.Contains(body, `"starting"`) {
		t.Fatalf("/readyz while starting = %d %s, want 503", st, body)
	}
	r := &running{url: base}
	if st, _, body := chat(t, r); st != 503 || !strings.Contains(string(body), `"code":"starting"`) {
		t.Fatalf("chat while starting = %d %s, want the 503 envelope", st, body)
	}
	st, _, body := r.do(t, "POST", "/v1/messages", testMasterKey, map[string]any{"model": "gpt-test", "max_tokens": 8,
		"messages": []map[string]string{{"role": "user", "content": "hi"}}})
	if st != 503 || !strings.Contains(string(body), `"type":"error"`) || !strings.Contains(string(body), `"code":"starting"`) {
		t.Fatalf("/v1/messages while starting = %d %s, want the Anthropic 503 envelope", st, body)
	}
	if st, _, body := r.do(t, "GET", "/health", "", nil); st != 503 {
		t.Fatalf("/health while starting = %d %s", st, body)
	}
	if up.calls.Load() != 0 {
		t.Fatal("a request reached the upstream before the router was ready")
	}

	close(release)
	testkit.Eventually(t, "/readyz to answer 200", func() bool {
		st, _ := get(t, base+"/readyz")
		return st == 200
	})
	if st, _, body := chat(t, r); st != 200 {
		t.Fatalf("chat when ready = %d %s", st, body)
	}
	if st, body := get(t, base+"/livez"); st != 200 || !strings.Contains(body, `"ready"`) {
		t.Fatalf("/livez when ready = %d %s", st, body)
	}
}

// blockingUpstream answers its first chat completion only once release is
// closed (entered is closed when that request arrives), every later one
// at once.
func blockingUpstream(t *testing.T) (url string, entered, release chan struct{}) {
	t.Helper()
	entered, release = make(chan struct{}), make(chan struct{})
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if n.Add(1) == 1 {
			close(entered)
			<-release
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	return srv.URL, entered, release
}

// waitClosed waits until nothing accepts a TCP connection at addr.
func waitClosed(t *testing.T, what, addr string) {
	t.Helper()
	testkit.Eventually(t, what, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
}

// holdInFlight sends a chat completion to r in the background and returns
// once blockingUpstream holds it (entered closed); its status arrives on
// the channel returned when the upstream answers.
func holdInFlight(t *testing.T, r *running, entered <-chan struct{}) <-chan int {
	t.Helper()
	inflight := make(chan int, 1)
	go func() {
		st, _, _ := chat(t, r)
		inflight <- st
	}()
	testkit.Receive(t, "the request to reach the upstream", entered)
	return inflight
}

// finishInFlight checks that the request held by blockingUpstream has not
// ended, lets its upstream answer, and waits for its 200.
func finishInFlight(t *testing.T, inflight <-chan int, release chan struct{}) {
	t.Helper()
	select {
	case st := <-inflight:
		t.Fatalf("the request in flight ended (%d) before its upstream answered", st)
	default:
	}
	close(release)
	if st := testkit.Receive(t, "the request in flight to finish", inflight); st != 200 {
		t.Fatalf("the request in flight = %d, want 200", st)
	}
}

// On a stop signal /readyz turns 503 at once while requests are still
// served for server.shutdown_delay (on the router's clock); then the
// listener closes and the request in flight still completes.
func TestShutdownDrainsBeforeStopping(t *testing.T) {
	upURL, entered, release := blockingUpstream(t)
	cfg, err := config.Parse([]byte(fmt.Sprintf("server:\n  master_key: %s\n  shutdown_delay: 5s\n"+
		"events:\n  store_dir: %s\n  storage: memory\n"+
		"credentials:\n  - name: cred-a\n    type: openai\n    api_key: sk-upstream-secret-0\n    base_url: %s/v1\n"+
		"models:\n  - name: gpt-test\n", testMasterKey, tempStore(t), upURL)), nil)
	if err != nil {
		t.Fatal(err)
	}
	clock := clockwork.NewFakeClock()
	rt, err := startRouterOn(context.Background(), cfg, testkit.Logger(t, hclog.Info), clock)
	if err != nil {
		t.Fatal(err)
	}
	ln := listenLoopback(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &running{router: rt, url: "http://" + ln.Addr().String()}
	done := make(chan error, 1)
	go func() { done <- rt.serve(ctx, ln) }()
	testkit.Eventually(t, "/readyz to answer 200", func() bool {
		st, _ := get(t, r.url+"/readyz")
		return st == 200
	})

	inflight := holdInFlight(t, r, entered)

	cancel() // what SIGTERM does to serve's context
	testkit.Eventually(t, "/readyz to answer 503", func() bool {
		st, body := get(t, r.url+"/readyz")
		return st == 503 && strings.Contains(body, `"draining"`)
	})
	if st, _, body := chat(t, r); st != 200 {
		t.Fatalf("a request while draining = %d %s, want it served", st, body)
	}

	clock.Advance(5 * time.Second)
	waitClosed(t, "the listener to close after the delay", ln.Addr().String())
	finishInFlight(t, inflight, release)
	if err := testkit.Receive(t, "serve to return", done); err != nil {
		t.Fatalf("serve: %v", err)
	}
}
