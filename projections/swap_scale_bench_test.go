package projections

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkSwapPerEvent is Live.Apply of one outcome with nothing pending
// (so it publishes a snapshot) on a credential holding n named pairs. The
// event touches one pair; what grows with n is the copy of the credential's
// pair map and of the model map a publish makes.
//
//	go test ./projections -run '^$' -bench SwapPerEvent
func BenchmarkSwapPerEvent(b *testing.B) {
	for _, n := range []int{10, 1000, 20000} {
		b.Run(fmt.Sprintf("pairs=%d", n), func(b *testing.B) {
			live := NewLive(nil)
			seq := uint64(0)
			apply := func(model string, pending uint64) {
				seq++
				ev := outcome(time.Duration(seq)*time.Millisecond, "c", model, 404)
				ev.Seq = seq
				live.Apply(ev, pending)
			}
			for i := range n {
				apply(fmt.Sprintf("m-%05d", i), uint64(n-1-i))
			}
			models := make([]string, 64)
			for i := range models {
				models[i] = fmt.Sprintf("m-%05d", i*n/len(models))
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				apply(models[i%len(models)], 0)
				i++
			}
		})
	}
}
