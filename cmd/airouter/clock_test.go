package main

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

// The router runs on the one clock startRouterOn is given, here a fake one
// years away from the wall clock: the admin API ends a ban an hour after
// that clock's now, the proxy stamps its outcomes with it, and the proxy
// judges bans by it (its Retry-After counts down on that clock).
func TestTheRouterRunsOnOneClock(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(at)
	r := startOn(t, testConfig(t, tempStore(t), "file", "", newUpstream(t, 200), newUpstream(t, 200)), clock)
	ban := func(cred string) {
		t.Helper()
		status, _, body := r.do(t, "POST", "/api/ban", testMasterKey,
			map[string]string{"credential": cred, "model": "gpt-test", "ttl": "1h", "reason": "clock"})
		if status != 200 {
			t.Fatalf("ban %s: %d %s", cred, status, body)
		}
	}

	ban("cred-a")
	bans := r.live.Load().Bans(at)
	if len(bans) != 1 || bans[0].Until == nil || !bans[0].Until.Equal(at.Add(time.Hour)) {
		t.Fatalf("bans = %+v, want cred-a's ending at %v, an hour after the clock's now", bans, at.Add(time.Hour))
	}

	clock.Advance(20 * time.Minute)
	if status, _, body := chat(t, r); status != 200 {
		t.Fatalf("chat with cred-b free: %d %s", status, body)
	}
	var stamped time.Time
	testkit.Eventually(t, "cred-b's outcome in the log", func() bool {
		ctx := context.Background()
		last, err := r.log.LastSeq(ctx)
		if err != nil {
			t.Fatal(err)
		}
		err = r.log.Read(ctx, 1, last, func(ev domain.Event, _ uint64) error {
			if ev.Kind == domain.KindOutcomeRecorded && ev.Outcome.Credential == "cred-b" {
				stamped = ev.At
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return !stamped.IsZero()
	})
	if want := at.Add(20 * time.Minute); !stamped.Equal(want) {
		t.Errorf("outcome stamped %v, want the clock's %v", stamped, want)
	}

	// Both banned: the sooner ban, cred-a's, ends 40 minutes from the
	// clock's now.
	ban("cred-b")
	status, hdr, body := chat(t, r)
	if status != 429 || hdr.Get("Retry-After") != "2400" {
		t.Errorf("chat with both banned: %d Retry-After %q %s, want 429 and 2400 s", status, hdr.Get("Retry-After"), body)
	}
}
