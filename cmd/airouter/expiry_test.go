package main

import (
	"context"
	"testing"

	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/decisions"
	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

// Expiry is computed, not swept: a ban stops applying at its until by the
// reader's clock; the log still records when the pair came back, as a
// ban.lifted event by expiry that names the ban, once the router's clock
// (a fake one here, so nothing waits out the ban) passes the until.
func TestAnExpiredBanIsRecordedInTheLog(t *testing.T) {
	up := newUpstream(t, 200)
	clock := clockwork.NewFakeClock()
	r := startOn(t, testConfig(t, tempStore(t), "file", "", up), clock)
	status, _, body := r.do(t, "POST", "/api/ban", testMasterKey,
		map[string]string{"credential": "cred-a", "model": "gpt-test", "ttl": "1h", "reason": "short"})
	if status != 200 {
		t.Fatalf("ban: %d %s", status, body)
	}
	if _, banned := r.live.Load().Blocked("cred-a", "gpt-test", clock.Now()); !banned {
		t.Fatal("the ban does not apply right after the API answered")
	}
	bans := r.live.Load().Bans(clock.Now())
	if len(bans) != 1 || bans[0].Until == nil {
		t.Fatalf("bans = %+v", bans)
	}
	until := *bans[0].Until
	if _, banned := r.live.Load().Blocked("cred-a", "gpt-test", until); banned {
		t.Fatal("the ban still applies at its until")
	}
	clock.Advance(until.Sub(clock.Now()) + decisions.DefaultSweepEvery)
	testkit.Eventually(t, "the ban to stop applying", func() bool {
		_, banned := r.live.Load().Blocked("cred-a", "gpt-test", clock.Now())
		return !banned
	})
	var lifted *domain.Event
	testkit.Eventually(t, "the expiry to be recorded", func() bool {
		ctx := context.Background()
		last, err := r.log.LastSeq(ctx)
		if err != nil {
			t.Fatal(err)
		}
		err = r.log.Read(ctx, 1, last, func(ev domain.Event, _ uint64) error {
			if ev.Kind == domain.KindBanLifted && ev.Unban.By == domain.LiftedByExpiry {
				lifted = &ev
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return lifted != nil
	})
	if lifted.Unban.Credential != "cred-a" || lifted.Unban.Model != "gpt-test" || lifted.Unban.BanID == "" {
		t.Fatalf("expiry event = %+v", lifted.Unban)
	}
	if status, _, body := chat(t, r); status != 200 {
		t.Fatalf("after expiry: %d %s", status, body)
	}
}
