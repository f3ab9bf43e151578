package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/airouter/airouter/internal/testkit"
)

// slowStream is an upstream streaming one event, then, once release is
// closed, the rest; entered is closed when its first request arrives.
func slowStream(t *testing.T) (u *upstream, entered, release chan struct{}) {
	entered, release = make(chan struct{}), make(chan struct{})
	u = &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := u.calls.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"first \"}}]}\n\n")
		_ = rc.Flush()
		if n == 1 {
			close(entered)
			<-release
		}
		fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"last\"}}]}\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(u.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	return u, entered, release
}

// A stream running through a reload that removes its credential completes
// on that credential; the removed credential gets no new request, the
// credential that replaced it gets them.
func TestReloadDuringAStream(t *testing.T) {
	a, entered, release := slowStream(t)
	b := newUpstream(t, 200)
	f := newReloadFile(t)
	f.write(t, map[string]string{"cred-a": a.URL}, oldClientKey, "")
	var logs testkit.Buffer
	r := startFromFile(t, f, &logs)

	req, _ := http.NewRequest(http.MethodPost, r.url+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-test","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+oldClientKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	if !sc.Scan() || !strings.Contains(sc.Text(), "first") {
		t.Fatalf("the stream's first event = %q", sc.Text())
	}
	testkit.Receive(t, "the stream to reach cred-a", entered)

	f.write(t, map[string]string{"cred-b": b.URL}, newClientKey, "")
	if st, ans, raw := postReload(t, r); st != 200 || fmt.Sprint(ans["credentials"]) != "map[added:[cred-b] changed:[] removed:[cred-a]]" {
		t.Fatalf("reload = %d %s", st, raw)
	}
	close(release)
	var rest []string
	for sc.Scan() {
		if l := sc.Text(); l != "" {
			rest = append(rest, l)
		}
	}
	if len(rest) != 2 || !strings.Contains(rest[0], "last") || rest[1] != "data: [DONE]" {
		t.Errorf("the rest of the stream = %q, want the last event and [DONE]", rest)
	}
	if got := resp.Header.Get("X-Fallback-Trail"); got != "" && !strings.Contains(got, "cred-a") {
		t.Errorf("the stream's trail = %q", got)
	}
	for range 3 {
		if st := chatWith(t, r, newClientKey); st != 200 {
			t.Fatalf("a request after the reload = %d", st)
		}
	}
	if _, health := get(t, r.url+"/health"); strings.Contains(health, `"cred-a"`) {
		t.Errorf("/health still lists the removed credential:\n%s", health)
	}
	if a.calls.Load() != 1 || b.calls.Load() != 3 {
		t.Errorf("calls after the reload: removed cred-a %d (want 1, the stream), cred-b %d (want 3)", a.calls.Load(), b.calls.Load())
	}
}

// SIGHUP to serve re-reads its -config file: serve runs here as the binary
// runs it (runServe, with its own listener and signal handling), the test
// process signals itself, and the rotated client key takes over.
func TestReloadOnSIGHUP(t *testing.T) {
	a := newUpstream(t, 200)
	f := newReloadFile(t)
	f.port = freePorts(t, 1)[0]
	f.write(t, map[string]string{"cred-a": a.URL}, oldClientKey, "")
	var logs testkit.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runServe(ctx, []string{"-config", f.path}, io.Discard, &logs) }()
	t.Cleanup(func() {
		cancel()
		if err := testkit.Receive(t, "serve to stop", done); err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	r := &running{url: fmt.Sprintf("http://127.0.0.1:%d", f.port)}
	testkit.Eventually(t, "/readyz to answer 200", func() bool {
		st, _ := get(t, r.url+"/readyz")
		return st == 200
	})
	if st := chatWith(t, r, oldClientKey); st != 200 {
		t.Fatalf("before SIGHUP: %d", st)
	}

	f.write(t, map[string]string{"cred-a": a.URL}, newClientKey, "")
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the new client key to be admitted", func() bool {
		return chatWith(t, r, newClientKey) == 200
	})
	if st := chatWith(t, r, oldClientKey); st != 401 {
		t.Errorf("the old client key after SIGHUP = %d, want 401", st)
	}
	// The new key is admitted once the proxy has the new config, a little
	// before the reload is counted and logged.
	testkit.Eventually(t, "the reload logged", func() bool { return len(logs.Lines("config reloaded")) > 0 })
	if got := logs.Lines("config reloaded"); len(got) != 1 || !strings.Contains(got[0], `SIGHUP`) {
		t.Errorf("the log's reload line = %q in:\n%s", got, logs.String())
	}
	if got := reloadsMetric(t, r, "ok"); !strings.HasSuffix(got, " 1") {
		t.Errorf("reloads ok metric after SIGHUP = %q, want 1", got)
	}
}
