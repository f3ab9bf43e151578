package eventlog

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/eventjson"
	"github.com/airouter/airouter/internal/testkit"
	"github.com/nats-io/nats.go/jetstream"
)

// Reading benchmarks: a replay of 1M outcomes through Consume and raw, and
// Open on a store of 1M events. Suggested flags are in bench_test.go.

// BenchmarkConsume1M replays 1M realistic outcome events: through Consume
// with eventjson.Decode, and, for comparison, through a bare ordered consumer
// with and without encoding/json.
func BenchmarkConsume1M(b *testing.B) {
	l := benchLog(b, b.TempDir())
	defer closeBench(b, l)
	fillLog(l, benchEvents)
	if s := l.Stats(); s.Published != benchEvents {
		b.Fatalf("filled %d events: %+v", s.Published, s)
	}
	b.Run("eventlog", func(b *testing.B) {
		for range b.N {
			n := 0
			start := time.Now()
			err := l.Read(context.Background(), 0, 0, func(ev domain.Event, _ uint64) error {
				if ev.Kind != "" {
					n++
				}
				return nil
			})
			if err != nil || n != benchEvents {
				b.Fatalf("read %d events: %v", n, err)
			}
			b.ReportMetric(float64(n)/time.Since(start).Seconds(), "events/s")
		}
	})
	for _, decode := range []bool{true, false} {
		b.Run(fmt.Sprintf("raw_ordered_json=%v", decode), func(b *testing.B) {
			for range b.N {
				b.ReportMetric(rawReplay(b, l, decode), "events/s")
			}
		})
	}
}

// rawReplay reads the stream with a bare ordered consumer, splitting
// batches into lines and, with decode, decoding each with encoding/json; it
// returns events per second.
func rawReplay(b *testing.B, l *Log, decode bool) float64 {
	last, err := l.LastSeq(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	oc, err := l.conn.cur().js.OrderedConsumer(context.Background(), EventsStream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	n := 0
	start := time.Now()
	cc, err := oc.Consume(func(m jetstream.Msg) {
		eventjson.Lines(m.Data(), func(line []byte) bool {
			if decode {
				var ev domain.Event
				if err := json.Unmarshal(line, &ev); err != nil {
					b.Error(err)
				}
			}
			n++
			return true
		})
		if md, err := m.Metadata(); err == nil && md.Sequence.Stream == last {
			close(done)
		}
	}, jetstream.PullMaxBytes(pullMaxBytes))
	if err != nil {
		b.Fatal(err)
	}
	<-done
	el := time.Since(start)
	cc.Stop()
	return float64(n) / el.Seconds()
}

// BenchmarkOpen1M times Open on a store of 1M events written by another
// process that was then killed (crash) and after a clean Close, both while
// the events are inside the duplicate window (which the server re-reads)
// and after it.
func BenchmarkOpen1M(b *testing.B) {
	crashed := b.TempDir()
	cmd := startHolder(b, crashed, benchEvents)
	if err := cmd.Process.Kill(); err != nil {
		b.Fatal(err)
	}
	_ = cmd.Wait()
	filled := time.Now()

	work := filepath.Join(b.TempDir(), "store")
	// openOnce times one Open; the copy of the crashed store and Close are
	// outside the timer, so ns/op is the time to open.
	openOnce := func(b *testing.B, crash bool) {
		b.StopTimer()
		if crash {
			if err := os.RemoveAll(work); err != nil {
				b.Fatal(err)
			}
			testkit.CopyDir(b, crashed, work)
		}
		b.StartTimer()
		l := benchLog(b, work)
		b.StopTimer()
		last, err := l.LastSeq(context.Background())
		if err != nil || last == 0 {
			b.Fatalf("LastSeq = %d, %v", last, err)
		}
		b.ReportMetric(float64(last), "messages")
		closeBench(b, l)
		b.ReportMetric(time.Since(filled).Seconds(), "s-since-fill")
		b.StartTimer()
	}
	b.Run("crash_in_window", func(b *testing.B) {
		for range b.N {
			openOnce(b, true)
		}
	})
	b.Run("clean_in_window", func(b *testing.B) {
		for range b.N {
			openOnce(b, false)
		}
	})
	time.Sleep(time.Until(filled.Add(DuplicateWindow + time.Second)))
	b.Run("crash_after_window", func(b *testing.B) {
		for range b.N {
			openOnce(b, true)
		}
	})
	b.Run("clean_after_window", func(b *testing.B) {
		for range b.N {
			openOnce(b, false)
		}
	})
}
