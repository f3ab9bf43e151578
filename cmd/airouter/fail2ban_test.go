package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/internal/testkit"
)

// End to end: three 500s on one credential ban it, every later request
// goes to the other credential, and no client sees an error.
func TestFail2BanMovesTrafficToTheHealthyCredential(t *testing.T) {
	bad := newUpstream(t, 500)
	good := newUpstream(t, 200)
	cfg := testConfig(t, tempStore(t), "file", "fail2ban:\n  max_attempts: 3\n  ban_duration: 1h\n", bad, good)
	r := start(t, cfg)

	for i := 0; i < 8; i++ {
		if status, _, body := chat(t, r); status != 200 {
			t.Fatalf("request %d: client saw %d %s", i, status, body)
		}
	}
	if bad.calls.Load() < 3 {
		t.Fatalf("the failing credential was tried %d times; round-robin should reach it", bad.calls.Load())
	}
	testkit.Eventually(t, "cred-a to be banned", func() bool {
		_, banned := r.live.Load().Blocked("cred-a", "gpt-test", time.Now())
		return banned
	})
	bans := r.live.Load().Bans(time.Now())
	if len(bans) != 1 || bans[0].Credential != "cred-a" || bans[0].ErrorCode != 500 || bans[0].Origin != "fail2ban" {
		t.Fatalf("bans = %+v", bans)
	}
	if !strings.Contains(bans[0].Reason, "3 x 500") {
		t.Fatalf("reason = %q", bans[0].Reason)
	}

	before := bad.calls.Load()
	for i := 0; i < 20; i++ {
		status, hdr, body := chat(t, r)
		if status != 200 {
			t.Fatalf("after the ban, request %d: %d %s", i, status, body)
		}
		if got := hdr.Get("X-Fallback-Attempts"); got != "1" {
			t.Fatalf("after the ban, request %d took %s attempts", i, got)
		}
	}
	if after := bad.calls.Load(); after != before {
		t.Fatalf("the banned credential got %d more requests", after-before)
	}
	_, _, metrics := r.do(t, "GET", "/metrics", "", nil)
	want := `auto_ai_router_credential_ban_events_total{credential="cred-a",error_code="500",model="gpt-test"} 1`
	if !strings.Contains(string(metrics), want) {
		t.Errorf("/metrics lacks %s", want)
	}
	// Every request after the ban skipped cred-a at selection.
	var rejected int
	line := grepLines(string(metrics), `selection_rejected_total{reason="banned"}`)
	if _, err := fmt.Sscanf(line, `auto_ai_router_credential_selection_rejected_total{reason="banned"} %d`, &rejected); err != nil || rejected < 20 {
		t.Errorf("selection rejections for bans = %d (%v), want >= 20", rejected, err)
	}
}
