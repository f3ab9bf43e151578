package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/internal/testkit"
)

// primaryAndFallback is the test config with cred-a (upstream a) a primary
// and cred-b (upstream b) its fallback, both serving gpt-test.
func primaryAndFallback(t *testing.T, extra string, a, b *upstream) *config.Config {
	t.Helper()
	yaml := fmt.Sprintf("server:\n  master_key: %s\n  port: 8080\n  shutdown_delay: 0s\n"+
		"events:\n  store_dir: %s\n  storage: file\ncredentials:\n"+
		"  - name: cred-a\n    type: openai\n    api_key: sk-upstream-secret-0\n    base_url: %s/v1\n"+
		"  - name: cred-b\n    type: openai\n    api_key: sk-upstream-secret-1\n    base_url: %s/v1\n    is_fallback: true\n"+
		"models:\n  - name: gpt-test\n%s", testMasterKey, tempStore(t), a.URL, b.URL, extra)
	cfg, err := config.Parse([]byte(yaml), nil)
	if err != nil {
		t.Fatalf("test config: %v\n%s", err, yaml)
	}
	return cfg
}

// A fallback pair under a permanent automatic ban gets its recovery probe
// while the primary serves every request, and a success lifts its ban: a
// fallback key comes back without waiting for the primaries to fail.
func TestFallbackPairIsProbedWhileThePrimaryServes(t *testing.T) {
	a, b := newUpstream(t, 401), newUpstream(t, 503)
	clock := clockwork.NewFakeClock()
	r := startReady(t, primaryAndFallback(t, recoveryExtra, a, b), clock)
	chat(t, r) // cred-a's 401 (not watched) fails over to cred-b, whose 503 bans it
	waitBanned(t, r, clock, "cred-b")
	if _, held := isBlocked(r, clock, "cred-a"); held {
		t.Fatal("the primary is held; the test needs it serving")
	}
	a.status.Store(200)
	b.status.Store(200)
	for range 3 {
		if st, _, body := chat(t, r); st != 200 {
			t.Fatalf("the primary serving: %d %s", st, body)
		}
	}
	clock.Advance(time.Minute)
	waitClaim(t, r, clock, "cred-b", 0)
	before := b.calls.Load()
	for range 3 {
		if st, _, body := chat(t, r); st != 200 {
			t.Fatalf("a request with the probe due: %d %s", st, body)
		}
	}
	if got := b.calls.Load() - before; got != 1 {
		t.Fatalf("the fallback saw %d requests, want the one probe", got)
	}
	testkit.Eventually(t, "the fallback's ban lifted by recovery", func() bool {
		_, held := isBlocked(r, clock, "cred-b")
		return !held
	})
	if n := recoveryLifts(t, r, "cred-b"); n != 1 {
		t.Fatalf("%d lifts by recovery in the log, want 1", n)
	}
}
