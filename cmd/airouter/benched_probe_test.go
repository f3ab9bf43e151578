package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/domain"
)

// A bench holds back the recovery probe of a pair banned while it was in
// force, and its lift lets the prober claim that probe at once: the
// snapshot's probe index keys the ban by the bench's end, and the unbench
// swap re-keys it by the ban's start.
func TestABenchHoldsTheProbeOfABanUntilItIsLifted(t *testing.T) {
	clock := clockwork.NewFakeClock()
	r := startOn(t, testConfig(t, tempStore(t), "file", recoveryExtra, newUpstream(t, 200), newUpstream(t, 200)), clock)
	now := clock.Now().UTC()
	for _, ev := range []domain.Event{
		{V: domain.SchemaVersion, Kind: domain.KindModelBenched, ID: "bench/gpt-test/probe", At: now,
			Bench: &domain.Bench{Model: "gpt-test", Until: now.Add(time.Hour), Failures: 3, Reason: "3 failures"}},
		{V: domain.SchemaVersion, Kind: domain.KindBanImposed, ID: "f2b/cred-a/gpt-test/probe", At: now,
			Ban: &domain.Ban{Credential: "cred-a", Model: "gpt-test", Origin: domain.OriginFail2Ban, ErrorCode: 503, Since: now, Permanent: true}},
	} {
		seq, err := r.log.PublishControl(t.Context(), ev)
		if err == nil {
			err = r.live.WaitFor(t.Context(), seq)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(2 * time.Minute) // probe_after has passed: held by the bench alone
	pol := r.cfg.Fail2Ban.Recovery.Policy()
	if due := r.live.Load().DueProbes(clock.Now(), pol, r.replica); len(due) != 0 {
		t.Fatalf("a probe due under the bench: %+v", due)
	}
	if status, body := postJSON(t, r, "/api/unbench", map[string]string{"model": "gpt-test"}); status != http.StatusOK {
		t.Fatalf("unbench: %d %s", status, body)
	}
	clock.Advance(time.Second)
	if pc := waitClaim(t, r, clock, "cred-a", 0); pc.BanID != "f2b/cred-a/gpt-test/probe" || pc.Replica != r.replica {
		t.Fatalf("claimed %+v, want the ban's first probe by this replica", pc)
	}
}
