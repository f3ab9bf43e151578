package projections

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkBenchSwap is Live.Apply of a model bench, then of its unbench,
// each publishing a snapshot, on a pool of creds × 100 models (every pair
// named, a tenth under an automatic ban, burstState): a bench holds every
// pair of its model pool-wide, and its swap should cost the benched models
// and the model's probed bans, not every credential's entries.
//
//	go test ./projections -run '^$' -bench BenchSwap -benchmem
func BenchmarkBenchSwap(b *testing.B) {
	for _, creds := range []int{10, 1000} {
		b.Run(fmt.Sprintf("pairs=%d", creds*100), func(b *testing.B) {
			live := NewLive(nil)
			for _, ev := range burstLog(creds, 100) {
				live.Apply(ev, 1)
			}
			live.Flush()
			seq := live.State().Seq()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				seq++
				ev := bench(2*time.Second+time.Duration(i)*time.Millisecond, "model-007", time.Hour)
				ev.Seq = seq
				live.Apply(ev, 0)
				seq++
				ev = unbench(2*time.Second+time.Duration(i)*time.Millisecond, "model-007")
				ev.Seq = seq
				live.Apply(ev, 0)
				i++
			}
		})
	}
}
