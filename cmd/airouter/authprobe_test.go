package main

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

// authProbeExtra adds a second model, cools a credential for 5m on a 401
// and probes automatic holds after a minute.
const authProbeExtra = "  - name: gpt-other\nfail2ban:\n  error_codes: [500]\n" +
	"  recovery:\n    probe_after: 1m\n    probe_max: 30m\ncooldown:\n  auth: 5m\n"

// authCooled sends requests until cred-a (upstream a, answering 401) was
// called once and waits for its credential-wide cooldown.
func authCooled(t *testing.T, r *running, clock clockwork.Clock, a *upstream) {
	t.Helper()
	for a.calls.Load() == 0 {
		if st, _, body := chat(t, r); st != 200 {
			t.Fatalf("a request: %d %s, want it failed over to cred-b", st, body)
		}
	}
	if got := cooldownLeft(t, r, clock, "cred-a", "gpt-other"); got != 5*time.Minute {
		t.Fatalf("cred-a cools for %s, want 5m", got)
	}
}

// waitAuthClaim waits until cred-a's auth cooldown carries claim interval.
func waitAuthClaim(t *testing.T, r *running, clock clockwork.Clock, interval int) domain.ProbeClaim {
	t.Helper()
	pc := waitClaim(t, r, clock, "cred-a", interval)
	if pc.Model != domain.AllModels || pc.Replica != r.replica {
		t.Fatalf("claim %+v, want one of the credential (model *) by this replica", pc)
	}
	return pc
}

// With recovery probes on, a credential cooled by a 401 gets one request
// after probe_after; its success re-validates the key: the cooldown of
// every model ends at once with a cooldown.lifted event, no client request
// fails on the way, and replay tells it.
func TestAuthCooldownEndsWhenAProbeSucceeds(t *testing.T) {
	a, b := newUpstream(t, 401), newUpstream(t, 200)
	clock := clockwork.NewFakeClock()
	path, cfg := replayConfig(t, eventsAt(tempStore(t), "file", ""), authProbeExtra, a, b)
	r := startReady(t, cfg, clock)
	authCooled(t, r, clock, a)
	a.status.Store(200)
	clock.Advance(time.Minute)
	waitAuthClaim(t, r, clock, 0)
	before := a.calls.Load()
	if st, _, body := chat(t, r); st != 200 {
		t.Fatalf("the probing request: %d %s", st, body)
	}
	if got := a.calls.Load() - before; got != 1 {
		t.Fatalf("cred-a saw %d requests, want the one probe", got)
	}
	testkit.Eventually(t, "cred-a's cooldown lifted", func() bool {
		_, held := r.live.Load().Blocked("cred-a", "gpt-other", clock.Now())
		return !held
	})
	lifts := countEvents(t, r, func(ev domain.Event) bool {
		return ev.Kind == domain.KindCooldownLifted && ev.CooldownLift.Credential == "cred-a" && ev.CooldownLift.By == domain.LiftedByRecovery
	})
	if lifts != 1 {
		t.Fatalf("%d cooldown lifts in the log, want 1", lifts)
	}
	replica := r.replica
	r.stop()
	replayShows(t, path,
		"cred-a  *  every model cooling down until ",
		"cred-a  *  recovery probe 1 claimed by "+replica+": one request may use the credential cooling down after a 401",
		"cred-a  *  auth cooldown lifted (recovery): a probe request with the credential succeeded",
	)
}

// A probe that meets the 401 again fails over unseen by the client, keeps
// the cooldown to its end (no new cooldown) and the next probe waits twice
// as long.
func TestAuthCooldownProbeOnARevokedKeyKeepsTheCooldown(t *testing.T) {
	a, b := newUpstream(t, 401), newUpstream(t, 200)
	clock := clockwork.NewFakeClock()
	r := startReady(t, testConfig(t, tempStore(t), "file", authProbeExtra, a, b), clock)
	authCooled(t, r, clock, a)
	clock.Advance(time.Minute)
	waitAuthClaim(t, r, clock, 0)
	before := a.calls.Load()
	if st, _, body := chat(t, r); st != 200 {
		t.Fatalf("the probing request: %d %s, want it failed over", st, body)
	}
	if got := a.calls.Load() - before; got != 1 {
		t.Fatalf("cred-a saw %d requests, want the one probe", got)
	}
	settle(t, r)
	if got := cooldownLeft(t, r, clock, "cred-a", "gpt-other"); got != 4*time.Minute {
		t.Fatalf("after the failed probe cred-a cools for %s more, want the 4m left", got)
	}
	started := countEvents(t, r, func(ev domain.Event) bool {
		return ev.Kind == domain.KindCooldownStarted && ev.Cooldown.Credential == "cred-a"
	})
	if started != 1 {
		t.Fatalf("%d cooldowns of cred-a in the log, want the first only", started)
	}
	for range 3 {
		if st, _, body := chat(t, r); st != 200 {
			t.Fatalf("a request after the probe: %d %s", st, body)
		}
	}
	if got := a.calls.Load() - before; got != 1 {
		t.Fatalf("cred-a saw %d requests after the claim, want only the probe", got)
	}
	clock.Advance(2*time.Minute - time.Second)
	if b, _ := isBlocked(r, clock, "cred-a"); b.Probe == nil || b.Probe.Interval != 0 {
		t.Fatalf("the second probe came early: %+v", b.Probe)
	}
	clock.Advance(time.Second)
	waitAuthClaim(t, r, clock, 1)
}
