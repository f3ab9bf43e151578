package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

// Several replicas on one external JetStream cluster act as one router.
// Every test here starts a three-node nats-server cluster in the process
// (cluster_helpers_test.go) and airouter replicas whose events stream has
// three replicas.

// A ban made through one replica's admin API is honoured by the other's
// routing, and the other way round; the convergence times are logged
// (BenchmarkClusterBanConvergence measures 1,000).
func TestClusterAdminBanConvergesOnEveryReplica(t *testing.T) {
	c := startNATSCluster(t, 3)
	up := newUpstream(t, 200)
	a := startReplica(t, "A", clusterConfig(t, c, "", up))
	b := startReplica(t, "B", clusterConfig(t, c, "", up))

	const n = 40
	var honoured []time.Duration
	for i := range n {
		from, to := a, b
		if i%2 == 1 {
			from, to = b, a
		}
		m := banAndWait(t, from, to, "cred-a", fmt.Sprintf("m-%d", i))
		honoured = append(honoured, m.honoured)
	}
	p50, p99 := percentiles(honoured)
	t.Logf("ban on one replica honoured by the other: p50 %s, p99 %s over %d bans", p50, p99, n)

	for _, r := range []*running{a, b} {
		var bans struct {
			Bans []json.RawMessage `json:"bans"`
		}
		status, _, body := r.do(t, "GET", "/api/bans", testMasterKey, nil)
		if err := json.Unmarshal(body, &bans); status != 200 || err != nil || len(bans.Bans) != n {
			t.Fatalf("/api/bans = %d %s", status, body)
		}
	}
	// The unban converges too, and the pair serves traffic again on both.
	status, _, body := b.do(t, "POST", "/api/unban", testMasterKey, map[string]any{"credential": "cred-a", "model": "m-0"})
	if status != 200 {
		t.Fatalf("unban = %d %s", status, body)
	}
	testkit.Eventually(t, "the unban on A", func() bool { return !blocked(a, "cred-a", "m-0") })
}

// Three 500s with max_attempts 3, two seen by A and one by B, add up to
// one ban that both replicas honour; both decide it from the same log
// position, and the log keeps one ban event.
func TestClusterFail2BanFromFailuresOnTwoReplicasIsOneBan(t *testing.T) {
	c := startNATSCluster(t, 3)
	bad := newUpstream(t, 500)
	extra := "fail2ban:\n  max_attempts: 3\n  ban_duration: 1h\n"
	a := startReplica(t, "A", clusterConfig(t, c, extra, bad))
	b := startReplica(t, "B", clusterConfig(t, c, extra, bad))

	chat(t, a)
	chat(t, a)
	// Both replicas fold both failures before B sees the third, so B's
	// failure is the one that crosses the threshold on both.
	testkit.Eventually(t, "the two failures on B", func() bool { return failures(b, "cred-a", "gpt-test", "500") == 2 })
	if blocked(a, "cred-a", "gpt-test") || blocked(b, "cred-a", "gpt-test") {
		t.Fatal("banned after two of three failures")
	}
	chat(t, b)
	if got := bad.calls.Load(); got != 3 {
		t.Fatalf("the upstream saw %d attempts, want 3", got)
	}
	for _, r := range []*running{a, b} {
		testkit.Eventually(t, "the ban on every replica", func() bool { return blocked(r, "cred-a", "gpt-test") })
	}
	// Both engines decided on the outcome at sequence 3 as they folded it,
	// before they folded the ban. Let them finish publishing, then pass a
	// fresh event through the log so a second copy, were it not
	// de-duplicated, would be stored before we count.
	testkit.Eventually(t, "the decision queues to drain", func() bool {
		return a.engine.Queued() == 0 && b.engine.Queued() == 0
	})
	banAndWait(t, b, a, "cred-a", "barrier")

	isBan := func(ev domain.Event) bool {
		return ev.Kind == domain.KindBanImposed && ev.Ban.Origin == domain.OriginFail2Ban
	}
	if n := countEvents(t, a, isBan); n != 1 {
		t.Fatalf("the log holds %d fail2ban ban events, want 1", n)
	}
	for _, r := range []*running{a, b} {
		bans := r.live.Load().Bans(time.Now())
		found := false
		for _, bn := range bans {
			if bn.Model == "gpt-test" {
				found = bn.Origin == domain.OriginFail2Ban && bn.ErrorCode == 500
			}
		}
		if !found {
			t.Fatalf("bans = %+v", bans)
		}
		if f := r.engine.Failed(); f != 0 {
			t.Fatalf("%d decisions failed to publish", f)
		}
	}
}

// A replica that starts after the others, or restarts, has folded the
// whole log (from the stream, or a checkpoint and the stream after it)
// when startRouter returns, before it serves a request.
func TestClusterLateAndRestartedReplicasCatchUpBeforeReady(t *testing.T) {
	c := startNATSCluster(t, 3)
	up := newUpstream(t, 200)
	cfg := clusterConfig(t, c, "", up)
	a := startReplica(t, "A", cfg)
	banMany := func(from, to int) {
		for i := from; i < to; i++ {
			nameInLog(t, a, "cred-a", fmt.Sprintf("m-%d", i))
			status, _, body := a.do(t, "POST", "/api/ban", testMasterKey,
				map[string]any{"credential": "cred-a", "model": fmt.Sprintf("m-%d", i), "ttl": "1h"})
			if status != 200 {
				t.Fatalf("ban %d = %d %s", i, status, body)
			}
			chat(t, a)
		}
	}
	// logEnd is the log's last position before a replica starts: what it
	// must have folded when it is ready (it publishes events of its own as
	// it starts, its heartbeat among them, which come after).
	logEnd := func() uint64 {
		t.Helper()
		last, err := a.log.LastSeq(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return last
	}
	ready := func(r *running, bans int, last uint64) {
		t.Helper()
		if got := r.live.Load().Seq(); got < last {
			t.Fatalf("ready at log position %d, the log is at %d", got, last)
		}
		for i := range bans {
			if !blocked(r, "cred-a", fmt.Sprintf("m-%d", i)) {
				t.Fatalf("ready without ban %d", i)
			}
		}
		var h struct {
			Log struct {
				Connected bool   `json:"connected"`
				Lag       uint64 `json:"lag"`
			} `json:"log"`
		}
		_, _, body := r.do(t, "GET", "/health", "", nil)
		if err := json.Unmarshal(body, &h); err != nil || !h.Log.Connected {
			t.Fatalf("/health = %s", body)
		}
	}

	banMany(0, 30)
	// A late joiner: no checkpoint yet, so it replays the stream. C is a
	// replica of its own (its own replica id), restarted below.
	cCfg := clusterConfig(t, c, "", up)
	last := logEnd()
	late := startReplica(t, "C", cCfg)
	ready(late, 30, last)

	// A restart: C saves a checkpoint as it stops, A moves on, and the new
	// C starts from that checkpoint plus the events after it.
	late.stop()
	seq, _, ok, err := a.log.LoadCheckpoint(t.Context())
	if err != nil || !ok {
		t.Fatalf("no checkpoint after C stopped: %v", err)
	}
	banMany(30, 60)
	if last, _ := a.log.LastSeq(t.Context()); last <= seq {
		t.Fatalf("the log (%d) did not move past the checkpoint (%d)", last, seq)
	}
	last = logEnd()
	again := startReplica(t, "C2", cCfg)
	ready(again, 60, last)
}

// Losing one node of three changes nothing a client sees: requests
// succeed and bans still converge. Outcomes are stored, except the few a
// replica had in flight to the leaving node at that instant: their fate is
// unknown, and they are counted as failed (outcomes are at-most-once), never
// lost silently nor stored twice.
func TestClusterLosingOneNATSNodeChangesNothing(t *testing.T) {
	c := startNATSCluster(t, 3)
	up := newUpstream(t, 200)
	a := startReplica(t, "A", clusterConfig(t, c, "", up))
	b := startReplica(t, "B", clusterConfig(t, c, "", up))
	banAndWait(t, a, b, "cred-a", "before")

	// The worst node to lose: the one leading the events stream.
	c.waitStreamLeader()
	lost := c.streamLeader()
	c.stop(lost)
	t.Logf("stopped %s, the events stream's leader", c.nodes[lost].name)

	requests := 0
	for i := range 20 {
		for _, r := range []*running{a, b} {
			if status, _, body := chat(t, r); status != 200 {
				t.Fatalf("request %d after losing a node: %d %s", i, status, body)
			}
			requests++
		}
	}
	var honoured []time.Duration
	for i := range 10 {
		from, to := a, b
		if i%2 == 1 {
			from, to = b, a
		}
		honoured = append(honoured, banAndWait(t, from, to, "cred-a", fmt.Sprintf("during-%d", i)).honoured)
	}
	p50, p99 := percentiles(honoured)
	t.Logf("with a node down, a ban is honoured on the other replica after p50 %s, p99 %s", p50, p99)
	var unknown int
	for _, r := range []*running{a, b} {
		s := r.log.Stats()
		if !s.Connected || s.Dropped != 0 {
			t.Fatalf("log stats with a node down = %+v", s)
		}
		unknown += int(s.Failed)
	}
	t.Logf("outcomes in flight to the lost node (fate unknown, counted as failed): %d", unknown)
	waitOutcomesAtLeast(t, []*running{a, b}, requests-unknown, requests)

	c.start(lost)
	c.waitMetaLeader()
	banAndWait(t, b, a, "cred-a", "after")
}

// With every NATS node gone, replicas keep routing on their snapshots, no
// request fails, /health says the log is unreachable, outcomes wait in the
// bounded queue, and when the cluster is back every one of them is stored
// and folded everywhere.
func TestClusterFullOutageHoldsOutcomesAndFlushesThem(t *testing.T) {
	c := startNATSCluster(t, 3)
	up, other := newUpstream(t, 200), newUpstream(t, 200)
	a := startReplica(t, "A", clusterConfig(t, c, "", up, other))
	b := startReplica(t, "B", clusterConfig(t, c, "", up, other))
	banAndWait(t, a, b, "cred-b", "banned-before")
	requests := 0
	for range 5 {
		chat(t, a)
		requests++
	}
	waitOutcomes(t, []*running{a, b}, requests)

	c.stopAll()
	for _, r := range []*running{a, b} {
		testkit.Eventually(t, "the replicas to notice", func() bool { return !r.log.Stats().Connected })
		status, body, h := health(t, r)
		if status != 200 || h.Log.Connected || h.Log.LastError == "" {
			t.Fatalf("/health during the outage = %d %s", status, body)
		}
	}
	for i := range 20 {
		for _, r := range []*running{a, b} {
			if status, _, body := chat(t, r); status != 200 {
				t.Fatalf("request %d during the outage: %d %s", i, status, body)
			}
			requests++
		}
	}
	for _, r := range []*running{a, b} {
		if !blocked(r, "cred-b", "banned-before") {
			t.Fatal("a replica forgot a ban during the outage")
		}
		// 20 outcomes wait: in the queue, and perhaps one in the
		// publisher's hand.
		if s := r.log.Stats(); s.Dropped != 0 || s.Failed != 0 || s.Pending < 19 {
			t.Fatalf("log stats during the outage = %+v", s)
		}
	}
	// An admin change cannot be recorded now; the API says so at once.
	status, _, body := a.do(t, "POST", "/api/ban", testMasterKey, map[string]any{"credential": "cred-b", "model": "gpt-test"})
	if status != http.StatusServiceUnavailable {
		t.Fatalf("ban during the outage = %d %s", status, body)
	}

	c.startAll()
	waitOutcomes(t, []*running{a, b}, requests)
	for _, r := range []*running{a, b} {
		if s := r.log.Stats(); s.Dropped != 0 || s.Failed != 0 || !s.Connected || !s.Writable {
			t.Fatalf("log stats after the outage = %+v", s)
		}
		status, body, h := health(t, r)
		if status != 200 || !h.Log.Connected || h.Log.Lag != 0 {
			t.Fatalf("/health after the outage = %d %s", status, body)
		}
	}
	banAndWait(t, b, a, "cred-b", "banned-after")
}

// convergence is one ban's timing: answered when the admin API answered,
// honoured when the other replica's routing skipped the pair, both from
// the moment the request was sent.
type convergence struct {
	answered, honoured time.Duration
}

// banAndWait bans cred/model through from's admin API and waits until to's
// snapshot blocks the pair.
func banAndWait(t testing.TB, from, to *running, cred, model string) convergence {
	t.Helper()
	nameInLog(t, from, cred, model)
	seen := make(chan time.Time, 1)
	start := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for {
			// The position is read before the check, so a ban folded
			// between the two is never waited past.
			seq := to.live.Load().Seq()
			if blocked(to, cred, model) {
				seen <- time.Now()
				return
			}
			if err := to.live.WaitFor(ctx, seq+1); err != nil {
				seen <- time.Time{}
				return
			}
		}
	}()
	status, body := postJSON(t, from, "/api/ban", map[string]any{"credential": cred, "model": model, "ttl": "1h"})
	answered := time.Since(start)
	if status != 200 {
		t.Fatalf("ban %s/%s = %d %s", cred, model, status, body)
	}
	at := <-seen
	if at.IsZero() {
		t.Fatalf("ban %s/%s was not honoured by the other replica in 30 s", cred, model)
	}
	return convergence{answered: answered, honoured: at.Sub(start)}
}

// waitOutcomes waits until the log holds n outcomes and every replica has
// folded the whole log, then checks that the log holds exactly n: none
// lost, none stored twice.
func waitOutcomes(t *testing.T, rs []*running, n int) {
	t.Helper()
	waitOutcomesAtLeast(t, rs, n, n)
}

// waitOutcomesAtLeast is waitOutcomes for a log that must hold at least
// lo and at most hi outcomes.
func waitOutcomesAtLeast(t *testing.T, rs []*running, lo, hi int) {
	t.Helper()
	isOutcome := func(ev domain.Event) bool { return ev.Kind == domain.KindOutcomeRecorded }
	testkit.EventuallyWithin(t, clusterWait, fmt.Sprintf("%d outcomes in the log", lo), func() bool {
		got, err := tryCountEvents(rs[0], isOutcome)
		return err == nil && got >= lo
	})
	last, err := rs[0].log.LastSeq(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		testkit.EventuallyWithin(t, clusterWait, "every replica to fold the whole log", func() bool { return r.live.Load().Seq() >= last })
	}
	if got := countEvents(t, rs[0], isOutcome); got < lo || got > hi {
		t.Fatalf("the log holds %d outcomes, want %d to %d", got, lo, hi)
	}
}

type healthDoc struct {
	Log struct {
		Connected bool   `json:"connected"`
		Lag       uint64 `json:"lag"`
		LastError string `json:"last_error"`
	} `json:"log"`
}

func health(t *testing.T, r *running) (int, []byte, healthDoc) {
	t.Helper()
	status, _, body := r.do(t, "GET", "/health", "", nil)
	var h healthDoc
	if err := json.Unmarshal(body, &h); err != nil {
		t.Fatalf("/health body: %v: %s", err, body)
	}
	return status, body, h
}
