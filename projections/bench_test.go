package projections

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/eventjson"
)

// The benchmark world: 100 credentials x 50 models.
const benchCreds, benchModels = 100, 50

var benchCredNames, benchModelNames = names("cred-", benchCreds), names("model-", benchModels)

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%03d", prefix, i)
	}
	return out
}

// realisticLog is n numbered events, one every 2 ms: outcomes on random
// pairs (mostly successes, some 429s, 5xx and timeouts) with, now and then,
// the bans and cooldowns a policy would have written.
func realisticLog(n int) []domain.Event {
	rng := rand.New(rand.NewPCG(1, 2))
	evs := make([]domain.Event, n)
	for i := range evs {
		d := time.Duration(i) * 2 * time.Millisecond
		cred, model := benchCredNames[rng.IntN(benchCreds)], benchModelNames[rng.IntN(benchModels)]
		var ev domain.Event
		switch r := rng.IntN(1000); {
		case r < 2:
			ev = autoBan(d, fmt.Sprintf("ban/%d", i), cred, model, 429, 5*time.Minute)
		case r < 4:
			ev = cooldown(d, cred, model, 30*time.Second)
		case r < 850:
			ev = outcome(d, cred, model, 200)
		case r < 920:
			ev = outcome(d, cred, model, 429)
		case r < 970:
			ev = outcome(d, cred, model, 500+rng.IntN(4))
		default:
			ev = outcomeClass(d, cred, model, 0, domain.ClassTimeout)
		}
		ev.Outcome = withDetails(ev.Outcome, i)
		ev.Seq = uint64(i + 1)
		evs[i] = ev
	}
	return evs
}

func withDetails(o *domain.Outcome, i int) *domain.Outcome {
	if o != nil {
		o.LatencyMS, o.RequestID = int64(100+i%900), fmt.Sprintf("req-%08x", i)
	}
	return o
}

// benchSnapshot is the state BenchmarkSnapshotBlocked reads: every pair
// known with counters, a ban on every 7th pair, a cooldown on every 11th,
// five credentials banned whole and three models benched.
func benchSnapshot() *Snapshot {
	s := NewState()
	var seq uint64
	apply := func(ev domain.Event) {
		seq++
		ev.Seq = seq
		s = Apply(s, ev)
	}
	for i, cred := range benchCredNames {
		for j, model := range benchModelNames {
			apply(outcome(0, cred, model, 429))
			k := i*benchModels + j
			if k%7 == 0 {
				apply(autoBan(0, fmt.Sprintf("b%d", k), cred, model, 429, 2*time.Hour))
			}
			if k%11 == 0 {
				apply(cooldown(0, cred, model, time.Hour))
			}
		}
		if i%20 == 0 {
			apply(adminBan(0, "w"+cred, cred, "*", "drain", 3*time.Hour))
		}
	}
	for _, model := range benchModelNames[:3] {
		apply(bench(0, model, time.Hour))
	}
	return s.Snapshot()
}

func BenchmarkSnapshotBlocked(b *testing.B) {
	now := at(time.Minute)
	snap := benchSnapshot()
	b.ReportAllocs()
	b.ResetTimer()
	blocked := 0
	for i := 0; i < b.N; i++ {
		k := i % (benchCreds * benchModels)
		if _, ok := snap.Blocked(benchCredNames[k/benchModels], benchModelNames[k%benchModels], now); ok {
			blocked++
		}
	}
	if b.N > benchCreds*benchModels && blocked == 0 {
		b.Fatal("nothing was blocked")
	}
}

// BenchmarkFold1M folds a million realistic events: already decoded
// ("fold"), from their JSON as the log consumer does ("decode+fold"), and
// decoding alone for comparison.
func BenchmarkFold1M(b *testing.B) {
	const n = 1_000_000
	evs := realisticLog(n)
	b.Run("fold", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			s := NewState()
			for _, ev := range evs {
				s = Apply(s, ev)
			}
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
	// The log as one buffer without pointers, so the garbage collector does
	// not scan a million decoded events that a real consumer never holds.
	var buf []byte
	ends := make([]int, n)
	for i, ev := range evs {
		line, err := eventjson.Encode(ev)
		if err != nil {
			b.Fatal(err)
		}
		buf = append(buf, line...)
		ends[i] = len(buf)
	}
	evs = nil
	each := func(fn func(seq uint64, line []byte)) {
		start := 0
		for i, end := range ends {
			fn(uint64(i+1), buf[start:end])
			start = end
		}
	}
	b.Run("decode+fold", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			s := NewState()
			each(func(seq uint64, line []byte) {
				ev, err := eventjson.Decode(line)
				if err != nil {
					b.Fatal(err)
				}
				ev.Seq = seq
				s = Apply(s, ev)
			})
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			each(func(_ uint64, line []byte) {
				if _, err := eventjson.Decode(line); err != nil {
					b.Fatal(err)
				}
			})
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
}

// BenchmarkLiveReplay is Live folding a backlog (a snapshot every swapEvery
// events at first, less often as the backlog lasts) and folding live (a
// snapshot after every event), to tune swapEvery and maxSwapEvery against
// the fold alone.
func BenchmarkLiveReplay(b *testing.B) {
	evs := realisticLog(200_000)
	for _, pending := range []uint64{1, 0} {
		name := map[uint64]string{1: "backlog", 0: "caught-up"}[pending]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				live := NewLive(nil)
				for _, ev := range evs {
					live.Apply(ev, pending)
				}
			}
			b.ReportMetric(float64(len(evs))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkSnapshotSwapUnderReads measures Blocked from 64 goroutines while
// a writer folds about 10,000 outcomes a second, publishing after each.
func BenchmarkSnapshotSwapUnderReads(b *testing.B) {
	live := NewLive(nil)
	warm := realisticLog(100_000)
	for _, ev := range warm {
		live.Apply(ev, 1)
	}
	live.Flush()
	stream := realisticLog(len(warm) + 200_000)[len(warm):]

	var stop atomic.Bool
	var applied atomic.Int64
	writerDone := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(writerDone)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for i := 0; !stop.Load(); {
			<-tick.C
			// Catch up to 10,000 events per second of wall time: with 64
			// busy readers the writer is not scheduled every millisecond.
			due := int(time.Since(start).Seconds() * 10_000)
			for ; i < due && !stop.Load(); i++ {
				live.Apply(stream[i%len(stream)], 0)
				applied.Add(1)
			}
		}
	}()
	now := at(4 * time.Minute)
	b.ReportAllocs()
	b.SetParallelism(32) // 64 readers on 2 CPUs
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			k := i % (benchCreds * benchModels)
			live.Load().Blocked(benchCredNames[k/benchModels], benchModelNames[k%benchModels], now)
			i += 7
		}
	})
	b.StopTimer()
	stop.Store(true)
	<-writerDone
	b.ReportMetric(float64(applied.Load())/time.Since(start).Seconds(), "writes/s")
}

func BenchmarkCheckpoint(b *testing.B) {
	s := NewState()
	for _, ev := range realisticLog(300_000) {
		s = Apply(s, ev)
	}
	pairs := 0
	for _, c := range s.creds {
		pairs += len(c.pairs)
	}
	if pairs != benchCreds*benchModels {
		b.Fatalf("state has %d pairs, want %d", pairs, benchCreds*benchModels)
	}
	data, err := s.MarshalCheckpoint()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := s.MarshalCheckpoint(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(data)), "bytes")
	})
	b.Run("unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := UnmarshalCheckpoint(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
