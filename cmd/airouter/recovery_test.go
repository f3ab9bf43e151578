package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

// recoveryExtra bans a pair for good on its first 503 and probes it after
// a minute.
const recoveryExtra = "fail2ban:\n  max_attempts: 1\n  ban_duration: permanent\n  error_codes: [503]\n" +
	"  recovery:\n    probe_after: 1m\n    probe_max: 30m\n"

// isBlocked reports whether r's routing holds cred's gpt-test at the clock.
func isBlocked(r *running, clock clockwork.Clock, cred string) (domain.Block, bool) {
	return r.live.Load().Blocked(cred, "gpt-test", clock.Now())
}

// waitBanned waits until r's routing holds cred.
func waitBanned(t *testing.T, r *running, clock clockwork.Clock, cred string) {
	t.Helper()
	testkit.Eventually(t, cred+" banned", func() bool { _, b := isBlocked(r, clock, cred); return b })
}

// waitClaim waits until r's snapshot holds an open probe claim for cred and
// returns it.
func waitClaim(t *testing.T, r *running, clock clockwork.Clock, cred string, interval int) domain.ProbeClaim {
	t.Helper()
	var pc domain.ProbeClaim
	testkit.Eventually(t, fmt.Sprintf("probe %d of %s claimed", interval, cred), func() bool {
		b, _ := isBlocked(r, clock, cred)
		if b.Probe == nil || b.Probe.Interval != interval {
			return false
		}
		pc = *b.Probe
		return true
	})
	return pc
}

func claims(t *testing.T, r *running, cred string) []domain.Event {
	t.Helper()
	var out []domain.Event
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := r.log.Read(ctx, 1, 0, func(ev domain.Event, _ uint64) error {
		if ev.Kind == domain.KindProbeClaimed && ev.Probe.Credential == cred {
			out = append(out, ev)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func recoveryLifts(t *testing.T, r *running, cred string) int {
	return countEvents(t, r, func(ev domain.Event) bool {
		return ev.Kind == domain.KindBanLifted && ev.Unban.By == domain.LiftedByRecovery && ev.Unban.Credential == cred
	})
}

// A permanent automatic ban on an upstream that is healthy again is lifted
// within probe_after plus one request, and no client request fails.
func TestRecoveryProbeLiftsABanOnAHealthyUpstream(t *testing.T) {
	a, b := newUpstream(t, 503), newUpstream(t, 200)
	clock := clockwork.NewFakeClock()
	r := startOn(t, testConfig(t, tempStore(t), "file", recoveryExtra, a, b), clock)
	if st, _, body := chat(t, r); st != 200 {
		t.Fatalf("the first request: %d %s", st, body)
	}
	waitBanned(t, r, clock, "cred-a")
	a.status.Store(200)
	clock.Advance(time.Minute)
	pc := waitClaim(t, r, clock, "cred-a", 0)
	if pc.Replica != r.replica {
		t.Fatalf("claimed by %q, want this replica %q", pc.Replica, r.replica)
	}
	before := a.calls.Load()
	if st, _, body := chat(t, r); st != 200 {
		t.Fatalf("the probing request: %d %s", st, body)
	}
	if got := a.calls.Load() - before; got != 1 {
		t.Fatalf("the healthy upstream saw %d requests, want the one probe", got)
	}
	testkit.Eventually(t, "the ban lifted by recovery", func() bool { _, b := isBlocked(r, clock, "cred-a"); return !b })
	if n := recoveryLifts(t, r, "cred-a"); n != 1 {
		t.Fatalf("%d lifts by recovery in the log, want 1", n)
	}
	_, _, m := r.do(t, "GET", "/metrics", "", nil)
	for _, want := range []string{`airouter_recovery_probes_total{result="succeeded"} 1`, `airouter_recovery_probes_total{result="claimed"} 1`} {
		if !strings.Contains(string(m), want) {
			t.Errorf("/metrics lacks %s:\n%s", want, grepLines(string(m), "recovery"))
		}
	}
}

// On an upstream still broken the probe fails over unseen by the client,
// does not count towards the ban, and the next probe waits twice as long.
func TestRecoveryProbeOnABrokenUpstreamFailsOverAndBacksOff(t *testing.T) {
	a, b := newUpstream(t, 503), newUpstream(t, 200)
	clock := clockwork.NewFakeClock()
	r := startOn(t, testConfig(t, tempStore(t), "file", recoveryExtra, a, b), clock)
	chat(t, r)
	waitBanned(t, r, clock, "cred-a")
	clock.Advance(time.Minute)
	waitClaim(t, r, clock, "cred-a", 0)
	key := domain.Key{Credential: "cred-a", Model: "gpt-test"}
	counted := r.live.Load().Pair(key, clock.Now()).ErrorCodeCounts["503"]
	before := a.calls.Load()
	if st, h, body := chat(t, r); st != 200 || !strings.Contains(h.Get("X-Fallback-Trail"), "cred-a") {
		t.Fatalf("the probing request: %d %s (trail %q)", st, body, h.Get("X-Fallback-Trail"))
	}
	if got := a.calls.Load() - before; got != 1 {
		t.Fatalf("the broken upstream saw %d requests, want the one probe", got)
	}
	// The probe is spent: the next request goes to cred-b alone.
	if st, _, _ := chat(t, r); st != 200 || a.calls.Load()-before != 1 {
		t.Fatalf("a second request: %d, cred-a calls %d", st, a.calls.Load()-before)
	}
	// Twice probe_after after the first claim, not once.
	clock.Advance(time.Minute)
	if due := r.live.Load().DueProbes(clock.Now(), r.cfg.Fail2Ban.Recovery.Policy(), r.replica); len(due) != 0 {
		t.Fatalf("a probe due one interval after a failed one: %+v", due)
	}
	clock.Advance(time.Minute)
	waitClaim(t, r, clock, "cred-a", 1)
	cs := claims(t, r, "cred-a")
	if len(cs) != 2 || cs[1].At.Sub(cs[0].At) != 2*time.Minute {
		t.Fatalf("claims = %+v, want two, 2m apart", cs)
	}
	testkit.Eventually(t, "the failed probe in the log", func() bool {
		return countEvents(t, r, func(ev domain.Event) bool {
			return ev.Kind == domain.KindOutcomeRecorded && ev.Outcome.Credential == "cred-a"
		}) == 2
	})
	if n := r.live.Load().Pair(key, clock.Now()).ErrorCodeCounts["503"]; n != counted {
		t.Fatalf("the failed probe was counted towards the ban: 503 count %d, was %d", n, counted)
	}
	_, _, m := r.do(t, "GET", "/metrics", "", nil)
	if want := `airouter_recovery_probes_total{result="failed"} 1`; !strings.Contains(string(m), want) {
		t.Errorf("/metrics lacks %s:\n%s", want, grepLines(string(m), "recovery"))
	}
}

// With fallback.panic every pair banned automatically is tried again
// instead of a 429; once the upstream recovers requests succeed and the
// ban of the pair that answered is lifted by recovery.
func TestPanicRoutingServesAPoolBannedByABlip(t *testing.T) {
	a, b := newUpstream(t, 503), newUpstream(t, 503)
	clock := clockwork.NewFakeClock()
	extra := "fail2ban:\n  max_attempts: 1\n  error_codes: [503]\nfallback:\n  panic: true\n"
	r := startOn(t, testConfig(t, tempStore(t), "file", extra, a, b), clock)
	if st, _, _ := chat(t, r); st == 200 || st == 429 {
		t.Fatalf("during the blip: %d, want the upstreams' failure", st)
	}
	waitBanned(t, r, clock, "cred-a")
	waitBanned(t, r, clock, "cred-b")
	// Still broken: the panic-routed request tries both and answers
	// their failure, not 429.
	calls := a.calls.Load() + b.calls.Load()
	if st, _, body := chat(t, r); st == 200 || st == 429 || a.calls.Load()+b.calls.Load()-calls != 2 {
		t.Fatalf("panic routing while broken: %d %s, %d attempts", st, body, a.calls.Load()+b.calls.Load()-calls)
	}
	a.status.Store(200)
	b.status.Store(200)
	if st, _, body := chat(t, r); st != 200 {
		t.Fatalf("after the upstream recovered: %d %s", st, body)
	}
	testkit.Eventually(t, "a ban lifted by recovery", func() bool {
		_, ba := isBlocked(r, clock, "cred-a")
		_, bb := isBlocked(r, clock, "cred-b")
		return !ba || !bb
	})
	if n := recoveryLifts(t, r, "cred-a") + recoveryLifts(t, r, "cred-b"); n != 1 {
		t.Fatalf("%d lifts by recovery, want 1", n)
	}
	for range 3 {
		if st, _, body := chat(t, r); st != 200 {
			t.Fatalf("after the lift: %d %s", st, body)
		}
	}
	_, _, m := r.do(t, "GET", "/metrics", "", nil)
	if want := `airouter_panic_requests_total{model="gpt-test"} 2`; !strings.Contains(string(m), want) {
		t.Errorf("/metrics lacks %s:\n%s", want, grepLines(string(m), "panic"))
	}
}

// A manual ban is never probed nor panic-routed, while the automatic ban
// beside it is both.
func TestManualBanIsNeverProbedNorPanicRouted(t *testing.T) {
	a, b := newUpstream(t, 200), newUpstream(t, 503)
	clock := clockwork.NewFakeClock()
	r := startOn(t, testConfig(t, tempStore(t), "file", recoveryExtra+"fallback:\n  panic: true\n", a, b), clock)
	if st, _, body := r.do(t, "POST", "/api/ban", testMasterKey,
		map[string]string{"credential": "cred-a", "model": "gpt-test", "reason": "maintenance"}); st != 200 {
		t.Fatalf("ban: %d %s", st, body)
	}
	if st, _, _ := chat(t, r); st == 200 || st == 429 {
		t.Fatalf("cred-b failing: %d", st)
	}
	waitBanned(t, r, clock, "cred-b")
	clock.Advance(time.Minute)
	waitClaim(t, r, clock, "cred-b", 0) // the prober has looked at both bans
	if n := len(claims(t, r, "cred-a")); n != 0 {
		t.Fatalf("%d probe claims for the manual ban", n)
	}
	if blk, _ := isBlocked(r, clock, "cred-a"); blk.Probe != nil || !blk.Manual {
		t.Fatalf("manual ban block = %+v", blk)
	}
	// The probe, then a panic-routed request: both reach cred-b only.
	for i := range 2 {
		if st, _, body := chat(t, r); st == 200 || st == 429 {
			t.Fatalf("request %d: %d %s", i, st, body)
		}
	}
	if n := a.calls.Load(); n != 0 {
		t.Fatalf("the manually banned upstream saw %d requests", n)
	}
	if n := b.calls.Load(); n != 3 {
		t.Fatalf("cred-b saw %d requests, want 3 (the ban, the probe, the panic)", n)
	}
}

// Two replicas on one NATS server claim each probe interval once between
// them, and only the claimer lets a request through.
func TestClusterOneProbePerInterval(t *testing.T) {
	srv := testkit.StartNATS(t)
	a, b := newUpstream(t, 503), newUpstream(t, 200)
	clock := clockwork.NewFakeClock()
	events := func(id string) string {
		return fmt.Sprintf("events:\n  store_dir: %s\n  storage: file\n  nats_url: %s\n  replicas: 1\n  replica_id: %s\n",
			filepath.Join(t.TempDir(), "unused"), srv.URL(), id)
	}
	x := startRecoveryReplica(t, "X", buildConfig(t, events("x"), recoveryExtra, a, b), clock)
	y := startRecoveryReplica(t, "Y", buildConfig(t, events("y"), recoveryExtra, a, b), clock)
	chat(t, x)
	waitBanned(t, x, clock, "cred-a")
	waitBanned(t, y, clock, "cred-a")
	for interval := range 2 {
		clock.Advance(time.Duration(1<<interval) * time.Minute)
		px := waitClaim(t, x, clock, "cred-a", interval)
		py := waitClaim(t, y, clock, "cred-a", interval)
		if px.Replica != py.Replica {
			t.Fatalf("interval %d: the replicas disagree on the claimer: %q and %q", interval, px.Replica, py.Replica)
		}
		before := a.calls.Load()
		for range 2 {
			for _, r := range []*running{x, y} {
				if st, _, body := chat(t, r); st != 200 {
					t.Fatalf("interval %d: %d %s", interval, st, body)
				}
			}
		}
		if got := a.calls.Load() - before; got != 1 {
			t.Fatalf("interval %d: %d probes reached the banned upstream, want 1", interval, got)
		}
		if n := len(claims(t, x, "cred-a")); n != interval+1 {
			t.Fatalf("after interval %d the log holds %d claims", interval, n)
		}
	}
}

// startRecoveryReplica starts a replica on clock, its log lines named.
func startRecoveryReplica(t *testing.T, name string, cfg *config.Config, clock clockwork.Clock) *running {
	t.Helper()
	logger := hclog.New(&hclog.LoggerOptions{Name: name, Output: testkit.Writer(t), Level: hclog.Info})
	rt, err := startRouterOn(context.Background(), cfg, logger, clock)
	if err != nil {
		t.Fatalf("start replica %s: %v", name, err)
	}
	return serveStarted(t, rt)
}

// Replay prints a recovery as it happened: the ban, the probe claimed and
// by whom, and the lift by recovery.
func TestReplayShowsProbesAndRecovery(t *testing.T) {
	a, b := newUpstream(t, 503), newUpstream(t, 200)
	clock := clockwork.NewFakeClock()
	path, cfg := replayConfig(t, eventsAt(tempStore(t), "file", ""), recoveryExtra, a, b)
	r := startOn(t, cfg, clock)
	chat(t, r)
	waitBanned(t, r, clock, "cred-a")
	a.status.Store(200)
	clock.Advance(time.Minute)
	waitClaim(t, r, clock, "cred-a", 0)
	chat(t, r)
	testkit.Eventually(t, "the ban lifted by recovery", func() bool { _, b := isBlocked(r, clock, "cred-a"); return !b })
	replica := r.replica
	r.stop()
	replayShows(t, path,
		"cred-a  gpt-test  banned (fail2ban) 1 x 503",
		"cred-a  gpt-test  recovery probe 1 claimed by "+replica+": one request may reach the banned pair",
		"cred-a  gpt-test  unbanned (recovery): a request to it succeeded",
	)
}
