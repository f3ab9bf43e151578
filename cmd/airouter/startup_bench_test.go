package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

// BenchmarkStartup1M measures start-up (log open, checkpoint restore,
// replay of the events after it, ready) with 1,000,000 events in the log,
// after a clean shutdown and after a crash (the store copied while the
// router ran, so there is no final checkpoint and no clean index).
//
//	go test ./cmd/airouter -run XXX -bench Startup1M -benchtime 3x
func BenchmarkStartup1M(b *testing.B) {
	const events = 1_000_000
	dir := b.TempDir()
	store := filepath.Join(dir, "data")
	crashed := filepath.Join(dir, "crashed")
	cfg := benchConfig(b, store)

	rt, err := startRouter(context.Background(), cfg, hclog.NewNullLogger())
	if err != nil {
		b.Fatal(err)
	}
	last := fill(b, rt, events)
	testkit.CopyDir(b, store, crashed)
	if err := rt.close(); err != nil {
		b.Fatal(err)
	}

	b.Run("clean", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			startOnce(b, cfg, last)
		}
	})
	b.Run("crash", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			fresh := filepath.Join(dir, fmt.Sprintf("crash-%d", i))
			testkit.CopyDir(b, crashed, fresh)
			c := benchConfig(b, fresh)
			b.StartTimer()
			startOnce(b, c, last)
		}
	})
}

// startOnce starts a router on cfg and checks that it is ready with the
// log folded to its last message, last.
func startOnce(b *testing.B, cfg *config.Config, last uint64) {
	began := time.Now()
	rt, err := startRouter(context.Background(), cfg, hclog.NewNullLogger())
	if err != nil {
		b.Fatal(err)
	}
	took := time.Since(began)
	if got := rt.live.Load().Seq(); got < last {
		b.Fatalf("ready at sequence %d, want >= %d", got, last)
	}
	b.ReportMetric(float64(took.Milliseconds()), "ms-to-ready")
	b.StopTimer()
	if err := rt.close(); err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
}

// fill publishes n outcome events through the router's own pipeline, waits
// until they are applied, and returns the log's last sequence.
func fill(b *testing.B, rt *router, n int) uint64 {
	at := time.Now().UTC()
	for i := 0; i < n; {
		o := domain.Outcome{Credential: fmt.Sprintf("cred-%d", i%100), Model: fmt.Sprintf("model-%d", i%50),
			Status: 200, Class: domain.ClassOK, LatencyMS: 120, Attempt: 1, RequestID: fmt.Sprintf("req-%d", i)}
		if i%10 == 0 {
			o.Status, o.Class = 503, domain.ClassServerError
		}
		if rt.log.Publish(domain.Event{Kind: domain.KindOutcomeRecorded, At: at, Outcome: &o}) {
			i++
			continue
		}
		time.Sleep(time.Millisecond) // queue full: let the publisher drain
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := rt.log.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	last, err := rt.log.LastSeq(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if err := rt.live.WaitFor(ctx, last); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d events in %d messages", n, last)
	return last
}

func benchConfig(b *testing.B, store string) *config.Config {
	yaml := fmt.Sprintf(`server:
  master_key: sk-bench-master
events:
  store_dir: %s
  max_bytes: -1
credentials:
  - name: cred-0
    type: openai
    api_key: sk-bench-upstream
    base_url: http://127.0.0.1:9
`, store)
	cfg, err := config.Parse([]byte(yaml), nil)
	if err != nil {
		b.Fatal(err)
	}
	return cfg
}
