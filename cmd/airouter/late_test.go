package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

// tenStrikes bans a pair for an hour after ten 500s.
const tenStrikes = "fail2ban:\n  max_attempts: 10\n  ban_duration: 1h\n  error_codes: [500]\n"

// externalConfig is testConfig for a router on c as an external log, with
// the events stream on one replica.
func externalConfig(t *testing.T, c *natsCluster, extra string, ups ...*upstream) *config.Config {
	t.Helper()
	events := fmt.Sprintf("events:\n  store_dir: %s\n  storage: file\n  nats_url: %s\n  replicas: 1\n  max_bytes: 64MiB\n  replica_id: test-%d\n",
		filepath.Join(t.TempDir(), "unused"), c.URLs(), replicaSerial.Add(1))
	return buildConfig(t, events, extra, ups...)
}

// failDuringOutage stops c, sends n requests through each router (every
// one a 500 from the only credential), moves the routers' clock a minute
// on, far past the log's 10 s de-duplication window, and starts c again.
// It returns the outcomes' latest time.
func failDuringOutage(t *testing.T, c *natsCluster, clock *clockwork.FakeClock, n int, rs ...*running) time.Time {
	t.Helper()
	c.stopAll()
	for _, r := range rs {
		testkit.Eventually(t, "the router to notice the outage", func() bool { return !r.log.Stats().Connected })
	}
	for _, r := range rs {
		for i := range n {
			if status, _, body := chat(t, r); status != http.StatusBadGateway {
				t.Fatalf("request %d during the outage: %d %s, want 502 after the upstream's 500", i, status, body)
			}
		}
		if s := r.log.Stats(); s.Pending < n-1 || s.Dropped != 0 || s.Failed != 0 {
			t.Fatalf("log stats during the outage = %+v, want the %d outcomes held", s, n)
		}
		if blocked(r, "cred-a", "gpt-test") {
			t.Fatal("banned while the outcomes could not reach the log")
		}
	}
	last := clock.Now()
	clock.Advance(time.Minute)
	c.startAll()
	return last
}

// fail2banEvents counts the Fail2Ban bans stored in the log.
func fail2banEvents(t *testing.T, r *running) int {
	return countEvents(t, r, func(ev domain.Event) bool {
		return ev.Kind == domain.KindBanImposed && ev.Ban.Origin == domain.OriginFail2Ban
	})
}

// checkBan checks r's ban of cred-a: Fail2Ban's, after ten 500s, ending an
// hour after the tenth.
func checkBan(t *testing.T, r *running, lastFailure time.Time) {
	t.Helper()
	bans := r.live.Load().Bans(time.Now())
	if len(bans) != 1 || bans[0].Origin != domain.OriginFail2Ban || !strings.HasPrefix(bans[0].Reason, "10 x 500") || bans[0].ErrorCode != 500 {
		t.Fatalf("bans = %+v, want Fail2Ban's after ten 500s", bans)
	}
	if want := lastFailure.Add(time.Hour); bans[0].Until == nil || !bans[0].Until.Equal(want) {
		t.Fatalf("the ban ends %v, want an hour after the tenth failure (%v)", bans[0].Until, want)
	}
}

// A router on an external log records ten 500s while the log is down.
// When the log is back they are folded, a minute after they happened, and
// they ban the pair, with no other failure: the ban is decided on them and
// ends an hour after the tenth.
func TestOutcomesHeldThroughAnOutageStillBan(t *testing.T) {
	c := startNATSCluster(t, 1)
	bad := newUpstream(t, 500)
	clock := clockwork.NewFakeClockAt(time.Now())
	r := startOn(t, externalConfig(t, c, tenStrikes, bad), clock)

	lastFailure := failDuringOutage(t, c, clock, 10, r)
	testkit.EventuallyWithin(t, clusterWait, "the ban from the held outcomes", func() bool {
		return blocked(r, "cred-a", "gpt-test")
	})
	checkBan(t, r, lastFailure)
	if n := bad.calls.Load(); n != 10 {
		t.Fatalf("the upstream saw %d requests, want the ten of the outage", n)
	}
	testkit.Eventually(t, "the decision queue to drain", func() bool { return r.engine.Queued() == 0 })
	if n := fail2banEvents(t, r); n != 1 {
		t.Fatalf("the log holds %d Fail2Ban bans, want 1", n)
	}
	if f := r.engine.Failed(); f != 0 {
		t.Fatalf("%d decisions failed to publish", f)
	}
}

// Two replicas on one external log each record five 500s while it is
// down. Back, both fold the ten in the same order and decide the same ban
// on the tenth; the log stores it once: one replica stores it, the other
// finds it stored.
func TestClusterOutcomesHeldThroughAnOutageBanOnce(t *testing.T) {
	c := startNATSCluster(t, 1)
	bad := newUpstream(t, 500)
	clock := clockwork.NewFakeClockAt(time.Now())
	a := startOn(t, externalConfig(t, c, tenStrikes, bad), clock)
	b := startOn(t, externalConfig(t, c, tenStrikes, bad), clock)

	lastFailure := failDuringOutage(t, c, clock, 5, a, b)
	for _, r := range []*running{a, b} {
		testkit.EventuallyWithin(t, clusterWait, "the ban on every replica", func() bool {
			return blocked(r, "cred-a", "gpt-test")
		})
	}
	testkit.Eventually(t, "both replicas to have published their decision", func() bool {
		return a.engine.Queued() == 0 && b.engine.Queued() == 0 &&
			a.engine.AlreadyDecided()+b.engine.AlreadyDecided() == 1
	})
	for _, r := range []*running{a, b} {
		checkBan(t, r, lastFailure)
		if f := r.engine.Failed(); f != 0 {
			t.Fatalf("%d decisions failed to publish", f)
		}
	}
	if n := fail2banEvents(t, a); n != 1 {
		t.Fatalf("the log holds %d Fail2Ban bans, want 1", n)
	}
}
