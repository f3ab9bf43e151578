package eventlog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/eventjson"
	"github.com/airouter/airouter/internal/testkit"
	"github.com/nats-io/nats.go/jetstream"
)

// Benchmarks run only with -bench. Suggested:
//
//	go test -run '^$' -bench . -benchtime 1x ./transport/eventlog/
//
// BenchmarkPublishPipeline and BenchmarkRawPublishAsync publish b.N events.
// In the others one op is a fixed measurement (2 s of offered load, a 1M
// event replay, one Open) reported with ReportMetric; an op of the rate and
// replay benchmarks takes over a second, so they run once. Run
// BenchmarkOpen1M with -benchtime 1x: its "in_window" cases only mean that
// while the duplicate window has not passed.

func benchLog(b *testing.B, dir string) *Log {
	b.Helper()
	l, err := Open(context.Background(), Options{StoreDir: dir, Logger: testkit.Logger(b, hclog.Warn)})
	if err != nil {
		b.Fatal(err)
	}
	return l
}

func closeBench(b *testing.B, l *Log) {
	if err := l.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPublishPipeline measures the pipeline's capacity: one goroutine
// publishes b.N outcomes through Publish and, when the queue is full, sleeps
// 100 µs and offers the event again (the request path would drop it instead).
// stored/s is what the stream acknowledged per second; queue-full counts the
// refused offers (Stats.Dropped).
func BenchmarkPublishPipeline(b *testing.B) {
	l := benchLog(b, b.TempDir())
	defer closeBench(b, l)
	evs := make([]domain.Event, 1024)
	for i := range evs {
		evs[i] = outcomeEvent(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		for !l.Publish(evs[i%len(evs)]) {
			time.Sleep(100 * time.Microsecond)
		}
	}
	if err := l.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	total := time.Since(start)
	b.StopTimer()
	s := l.Stats()
	if s.Published != uint64(b.N) {
		b.Errorf("stored %d of %d events: %+v", s.Published, b.N, s)
	}
	b.ReportMetric(float64(s.Published)/total.Seconds(), "stored/s")
	b.ReportMetric(float64(s.Dropped), "queue-full")
	b.ReportMetric(float64(s.Failed), "failed")
}

// BenchmarkRawPublishAsync is the ceiling on this machine for comparison:
// pre-encoded events straight into PublishAsync from one goroutine, no
// queue.
func BenchmarkRawPublishAsync(b *testing.B) {
	l := benchLog(b, b.TempDir())
	defer closeBench(b, l)
	items := make([]pubItem, 1024)
	var subjects subjectCache
	for i := range items {
		var it pubItem
		if err := encodeItem(&it, outcomeEvent(i)); err != nil {
			b.Fatal(err)
		}
		subjects.resolve(&it) // an outcome names its pair; the publisher looks up its subject
		items[i] = it
	}
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		it := items[i%len(items)]
		for {
			_, err := l.conn.cur().js.PublishAsync(it.subject, it.data)
			if err == nil {
				break
			}
			if !errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
				b.Fatal(err)
			}
		}
	}
	<-l.conn.cur().js.PublishAsyncComplete()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "stored/s")
}

// BenchmarkPublishRate offers outcomes at a fixed rate from 4 goroutines
// for 2 s and reports drops and the Publish call's latency (sampled).
func BenchmarkPublishRate(b *testing.B) {
	for _, rate := range []int{50_000, 100_000, 130_000} {
		b.Run(fmt.Sprintf("%dk", rate/1000), func(b *testing.B) {
			for range b.N {
				publishAtRate(b, rate, 2*time.Second)
			}
		})
	}
}

func publishAtRate(b *testing.B, rate int, d time.Duration) {
	l := benchLog(b, b.TempDir())
	defer closeBench(b, l)
	const producers = 4
	evs := make([]domain.Event, 1024)
	for i := range evs {
		evs[i] = outcomeEvent(i)
	}
	var wg sync.WaitGroup
	lat := make([][]time.Duration, producers)
	start := time.Now()
	for p := range producers {
		wg.Go(func() {
			per := float64(rate) / producers
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			sent := 0
			for now := range tick.C {
				el := now.Sub(start)
				if el >= d {
					return
				}
				target := int(per * el.Seconds())
				for ; sent < target; sent++ {
					ev := evs[(sent*producers+p)%len(evs)]
					if sent%64 == 0 {
						t := time.Now()
						l.Publish(ev)
						lat[p] = append(lat[p], time.Since(t))
						continue
					}
					l.Publish(ev)
				}
			}
		})
	}
	wg.Wait()
	if err := l.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	total := time.Since(start)
	s := l.Stats()
	all := slices.Concat(lat...)
	slices.Sort(all)
	b.ReportMetric(float64(s.Published+s.Dropped+s.Failed)/d.Seconds(), "offered/s")
	b.ReportMetric(float64(s.Published)/total.Seconds(), "stored/s")
	b.ReportMetric(float64(s.Dropped), "drops")
	b.ReportMetric(float64(s.Failed), "failed")
	if len(all) > 0 {
		b.ReportMetric(float64(all[len(all)*99/100].Nanoseconds()), "publish-p99-ns")
		b.ReportMetric(float64(all[len(all)-1].Nanoseconds()), "publish-max-ns")
	}
}

const benchEvents = 1_000_000

// BenchmarkCodec is the per-event cost of eventjson.Encode (paid by Publish's
// caller) and eventjson.Decode (paid by every consumer) for a realistic
// outcome.
func BenchmarkCodec(b *testing.B) {
	ev := outcomeEvent(5)
	data, err := eventjson.Encode(ev)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := eventjson.Encode(ev); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := eventjson.Decode(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkPublishControl is one control event (an admin ban) published
// and acknowledged on a file store: "synced" as the log does it (the
// event's block files synced before PublishControl returns, durable.go),
// "unsynced" without the sync, for its cost.
func BenchmarkPublishControl(b *testing.B) {
	for _, synced := range []bool{true, false} {
		name := map[bool]string{true: "synced", false: "unsynced"}[synced]
		b.Run(name, func(b *testing.B) {
			l := benchLog(b, b.TempDir())
			defer closeBench(b, l)
			if !synced {
				l.conn.msgsDir = ""
			}
			ctx := context.Background()
			i := 0
			for b.Loop() {
				i++
				if _, err := l.PublishControl(ctx, banEvent(fmt.Sprintf("bench/%d", i), "cred-01", "m")); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLogCostAtRate is what the log costs the process at a steady
// request rate: successful outcomes on two pairs (the side-by-side
// benchmark's pool) published at rate per second for 3 s while an ordered
// consumer decodes them, as a router's fold does. A producer tick every
// millisecond publishes the outcomes due by then; each loaded second
// (until its outcomes are consumed) follows a second of the same ticks
// with the log open and nothing published, whose CPU is subtracted. It reports the log's CPU per second of load and per outcome,
// and the messages the stream stored per second (a round of the publisher
// sends one message per pair): for a router alone on its log (quiet rounds
// held) and one sharing it with other replicas.
func BenchmarkLogCostAtRate(b *testing.B) {
	for _, alone := range []bool{true, false} {
		for _, rate := range []int{300, 2000, 5000} {
			b.Run(fmt.Sprintf("alone=%v/%d", alone, rate), func(b *testing.B) {
				for range b.N {
					logCostAtRate(b, rate, 3*time.Second, alone)
				}
			})
		}
	}
}

func logCostAtRate(b *testing.B, rate int, d time.Duration, alone bool) {
	l := benchLog(b, b.TempDir())
	defer closeBench(b, l)
	l.HoldQuietRounds(alone)
	var mu sync.Mutex
	seqs, events := map[uint64]struct{}{}, 0
	stop, err := l.Consume(context.Background(), 1, func(ev domain.Event, _ uint64) {
		mu.Lock()
		seqs[ev.Seq] = struct{}{}
		events++
		mu.Unlock()
	})
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	evs := make([]domain.Event, 2)
	for i := range evs {
		evs[i] = pairOutcome(i, domain.ClassOK)
		evs[i].Outcome.Credential = fmt.Sprintf("cred-%02d", i)
	}
	// Idle and loaded seconds alternate, so the machine's drift falls on both.
	var idle, loaded time.Duration
	sent := 0
	for range int(d / time.Second) {
		cpu := testkit.ProcessCPU()
		ticksFor(time.Second, 0, nil)
		idle += testkit.ProcessCPU() - cpu
		cpu = testkit.ProcessCPU()
		ticksFor(time.Second, rate, func(int) { l.Publish(evs[sent%len(evs)]); sent++ })
		if err := l.Flush(context.Background()); err != nil {
			b.Fatal(err)
		}
		testkit.Eventually(b, "every outcome consumed", func() bool { mu.Lock(); defer mu.Unlock(); return events >= sent })
		loaded += testkit.ProcessCPU() - cpu
	}
	cost := loaded - idle
	b.ReportMetric(float64(cost.Microseconds())/d.Seconds(), "log-cpu-µs/s")
	b.ReportMetric(float64(cost.Nanoseconds())/float64(sent), "log-cpu-ns/outcome")
	mu.Lock()
	b.ReportMetric(float64(len(seqs))/d.Seconds(), "messages/s")
	mu.Unlock()
}

// ticksFor runs a 1 ms ticker for d, calling publish for every outcome due
// at rate per second.
func ticksFor(d time.Duration, rate int, publish func(n int)) {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	start, sent := time.Now(), 0
	for now := range tick.C {
		el := now.Sub(start)
		if el >= d {
			break
		}
		for due := int(float64(rate) * el.Seconds()); sent < due; sent++ {
			publish(sent)
		}
	}
	for due := int(float64(rate) * d.Seconds()); sent < due; sent++ {
		publish(sent)
	}
}
