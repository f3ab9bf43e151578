package main

import (
	"strings"
	"syscall"
	"testing"

	"github.com/airouter/airouter/internal/testkit"
)

// The built binary on SIGTERM: /readyz turns 503 ("draining") while the
// request in flight goes on, the port closes after server.shutdown_delay,
// the request still completes, and the process exits 0 after closing its
// log.
func testServeSIGTERM(t *testing.T, bin string) {
	upURL, entered, release := blockingUpstream(t)
	p := startOneCredential(t, bin, "  shutdown_delay: 2s\n", upURL)
	r := &running{url: p.url}
	inflight := holdInFlight(t, r, entered)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "/readyz to answer 503 draining", func() bool {
		st, body := get(t, r.url+"/readyz")
		return st == 503 && strings.Contains(body, `"draining"`)
	})
	waitClosed(t, "the port to close after the delay", strings.TrimPrefix(p.url, "http://"))
	finishInFlight(t, inflight, release)
	if err := p.wait(t); err != nil {
		t.Fatalf("serve exited with %v\n%s", err, p.logs.String())
	}
	for _, want := range []string{"airouter ready", "draining", "event log closed"} {
		if !strings.Contains(p.logs.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, p.logs.String())
		}
	}
}
