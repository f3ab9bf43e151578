package projections

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkSwapPerEvent is Live.Apply of one outcome with nothing pending
// (so it publishes a snapshot) on a credential holding n named pairs, on
// one of them or (new-pair) on a model the credential had none of. The
// event touches one pair, so the publish copies that pair, its
// credential, its model when the failure window changed, and the tree
// nodes on their paths: the cost should not grow with n.
//
//	go test ./projections -run '^$' -bench SwapPerEvent
func BenchmarkSwapPerEvent(b *testing.B) {
	for _, run := range []struct {
		n        int
		newPairs bool
	}{{10, false}, {1000, false}, {20000, false}, {10, true}, {1000, true}, {20000, true}} {
		n, newPairs := run.n, run.newPairs
		name := fmt.Sprintf("pairs=%d", n)
		if newPairs {
			name = fmt.Sprintf("new-pair/pairs=%d", n)
		}
		b.Run(name, func(b *testing.B) {
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
				if newPairs {
					apply(fmt.Sprintf("new-%07d", i), 0)
				} else {
					apply(models[i%len(models)], 0)
				}
				i++
			}
		})
	}
}
