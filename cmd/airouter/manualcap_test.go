package main

import (
	"testing"

	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/domain"
)

// The ejection cap never holds back a manual ban: under a cap of 50 an
// operator bans both pairs of the model and both are out, with no
// ban.withheld.
func TestEjectionCapNeverCapsAManualBan(t *testing.T) {
	a, b := newUpstream(t, 200), newUpstream(t, 200)
	clock := clockwork.NewFakeClock()
	r := startReady(t, testConfig(t, tempStore(t), "file", "fail2ban:\n  max_ejection_percent: 50\n", a, b), clock)
	chat(t, r)
	chat(t, r)
	for _, cred := range []string{"cred-a", "cred-b"} {
		if st, _, body := r.do(t, "POST", "/api/ban", testMasterKey, map[string]any{
			"credential": cred, "model": "gpt-test", "reason": "rotate the key",
		}); st != 200 {
			t.Fatalf("ban %s: %d %s", cred, st, body)
		}
	}
	settle(t, r)
	if got := banned(r, clock); len(got) != 2 {
		t.Fatalf("banned %v, want both pairs", got)
	}
	if n := countEvents(t, r, func(ev domain.Event) bool { return ev.Kind == domain.KindBanWithheld }); n != 0 {
		t.Fatalf("%d ban.withheld events for manual bans", n)
	}
}
