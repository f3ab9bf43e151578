package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

// Cluster benchmarks: a three-node nats-server cluster and airouter
// replicas in one process on 127.0.0.1 (so every number includes the
// cluster's own CPU on the same cores). Each call of the benchmark
// function does one fixed measurement whatever b.N is and reports it with
// ReportMetric; repeat with -count.
//
//	go test ./cmd/airouter -run '^$' -bench Cluster -benchtime 1x

// BenchmarkClusterBanConvergence bans 1,000 pairs one after the other
// through replica A's admin API and measures, from the moment each request
// is sent, when A answered (A has applied the ban) and when replica B's
// routing honours it (B's snapshot blocks the pair): on a quiet log, and
// while both replicas record outcomes at 5,000/s each.
func BenchmarkClusterBanConvergence(b *testing.B) {
	for _, rate := range []int{0, 5000} {
		b.Run(fmt.Sprintf("outcomes=%d/s/replica", rate), func(b *testing.B) {
			c := startNATSCluster(b, 3)
			up := benchUpstream(b)
			ra := startReplicaLogging(b, clusterConfig(b, c, "", up), quietLogger("A"))
			rb := startReplicaLogging(b, clusterConfig(b, c, "", up), quietLogger("B"))
			stop := make(chan struct{})
			var wg sync.WaitGroup
			if rate > 0 {
				for _, r := range []*running{ra, rb} {
					wg.Go(func() { offerOutcomes(r, rate, stop) })
				}
			}
			const bans = 1000
			for run := range b.N {
				var answered, honoured []time.Duration
				for i := range bans {
					m := banAndWait(b, ra, rb, "cred-a", fmt.Sprintf("bench-%d-%d", run, i))
					answered = append(answered, m.answered)
					honoured = append(honoured, m.honoured)
				}
				a50, a99 := percentiles(answered)
				h50, h99 := percentiles(honoured)
				b.ReportMetric(ms(a50), "answered-p50-ms")
				b.ReportMetric(ms(a99), "answered-p99-ms")
				b.ReportMetric(ms(h50), "honoured-p50-ms")
				b.ReportMetric(ms(h99), "honoured-p99-ms")
			}
			close(stop)
			wg.Wait()
		})
	}
}

// offerOutcomes records rate outcomes per second through r's log until
// stop is closed, as the proxy would (a full queue drops).
func offerOutcomes(r *running, rate int, stop <-chan struct{}) {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	start, sent := time.Now(), 0
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			for target := int(float64(rate) * now.Sub(start).Seconds()); sent < target; sent++ {
				r.record(domain.Outcome{Credential: "cred-a", Model: "gpt-test", Status: 200,
					Class: domain.ClassOK, LatencyMS: 120, Attempt: 1, RequestID: fmt.Sprintf("bg-%d", sent)})
			}
		}
	}
}

// BenchmarkClusterOutcomes measures how many outcomes per second one
// events stream (three stream replicas) carries when every router replica
// publishes its share through the log's non-blocking Publish (offering
// again after a short sleep when the queue is full, where the request path
// would drop) and every replica folds every outcome: stored/s is what the
// stream acknowledged, folded/s is the total divided by the time until the
// slowest replica has folded all of them.
func BenchmarkClusterOutcomes(b *testing.B) {
	for _, replicas := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("replicas=%d", replicas), func(b *testing.B) {
			c := startNATSCluster(b, 3)
			up := benchUpstream(b)
			var rs []*running
			for i := range replicas {
				rs = append(rs, startReplicaLogging(b, clusterConfig(b, c, "", up), quietLogger(fmt.Sprintf("R%d", i))))
			}
			for range b.N {
				outcomesOnce(b, rs, 200_000)
			}
		})
	}
}

func outcomesOnce(b *testing.B, rs []*running, total int) {
	published := make([]uint64, len(rs))
	for i, r := range rs {
		published[i] = r.log.Stats().Published
	}
	share := total / len(rs)
	start := time.Now()
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Go(func() {
			for n := range share {
				ev := domain.Event{Kind: domain.KindOutcomeRecorded, At: time.Now().UTC(), Outcome: &domain.Outcome{
					Credential: "cred-a", Model: "gpt-test", Status: 200, Class: domain.ClassOK,
					LatencyMS: 120, Attempt: 1, RequestID: fmt.Sprintf("r%d-%d", i, n),
				}}
				for !r.log.Publish(ev) {
					time.Sleep(100 * time.Microsecond)
				}
			}
		})
	}
	wg.Wait()
	var stored time.Duration
	testkit.EventuallyWithin(b, 5*time.Minute, "every outcome to be stored", func() bool {
		for i, r := range rs {
			if r.log.Stats().Published-published[i] < uint64(share) {
				return false
			}
		}
		stored = time.Since(start)
		return true
	})
	last, err := rs[0].log.LastSeq(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range rs {
		testkit.EventuallyWithin(b, 5*time.Minute, "every replica to fold every outcome", func() bool { return r.live.Load().Seq() >= last })
	}
	folded := time.Since(start)
	var failed, dropped uint64
	for _, r := range rs {
		s := r.log.Stats()
		failed += s.Failed
		dropped += s.Dropped
	}
	n := float64(share * len(rs))
	b.ReportMetric(n/stored.Seconds(), "stored/s")
	b.ReportMetric(n/folded.Seconds(), "folded/s")
	b.ReportMetric(float64(failed), "failed")
	b.ReportMetric(float64(dropped), "queue-full")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// benchUpstream is an upstream for configs whose replicas are never asked
// to proxy.
func benchUpstream(b *testing.B) *upstream {
	srv := httptest.NewServer(http.NotFoundHandler())
	b.Cleanup(srv.Close)
	return &upstream{Server: srv}
}

func quietLogger(name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: name, Output: io.Discard, Level: hclog.Error})
}
