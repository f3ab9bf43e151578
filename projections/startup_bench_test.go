package projections

import (
	"fmt"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// poolLog names every pair of creds x models once with a failed outcome,
// then bans every tenth pair: the log a router folds at start-up in the
// proxy's pool benchmark.
func poolLog(creds, models int) []domain.Event {
	var evs []domain.Event
	for c := range creds {
		for m := range models {
			evs = append(evs, outcome(time.Duration(len(evs))*time.Millisecond, fmt.Sprintf("cred-%04d", c), fmt.Sprintf("model-%03d", m), 429))
		}
	}
	for i := 0; i < creds*models; i += 10 {
		c, m := i/models, i%models
		evs = append(evs, autoBan(time.Duration(len(evs))*time.Millisecond, fmt.Sprintf("ban/%d", i), fmt.Sprintf("cred-%04d", c), fmt.Sprintf("model-%03d", m), 429, time.Hour))
	}
	for i := range evs {
		evs[i].Seq = uint64(i + 1)
	}
	return evs
}

// BenchmarkStartUp is what start-up costs the projections on a pool of
// 1,000 credentials x 100 models: Live folding the pool's log as a backlog
// (the last event caught up), and a full State.Snapshot of the result
// (start-up from a checkpoint, replay -at).
//
//	go test ./projections -run '^$' -bench StartUp -benchmem
func BenchmarkStartUp(b *testing.B) {
	evs := poolLog(1000, 100)
	b.Run("backlog", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			live := NewLive(nil)
			for i, ev := range evs {
				live.Apply(ev, uint64(len(evs)-1-i))
			}
		}
		b.ReportMetric(float64(len(evs))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
	b.Run("snapshot", func(b *testing.B) {
		s := fold(evs)
		b.ReportAllocs()
		for b.Loop() {
			s.Snapshot()
		}
	})
}
