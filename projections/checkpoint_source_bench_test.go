package projections

import (
	"fmt"
	"testing"
)

// BenchmarkCheckpointHandoff times, at 1,000 and 100,000 pairs (a tenth
// banned), what a checkpoint costs the writer goroutine and the
// checkpointer's goroutine: the state's marshal (what the writer did at
// every checkpoint before the handoff), the handoff of the snapshot just
// published (CheckpointOf) with no record stale and with every record
// stale (its worst case: each pair's last use copied), and the
// checkpointer's marshal of that checkpoint.
//
//	go test ./projections -run '^$' -bench CheckpointHandoff -benchtime 3x
func BenchmarkCheckpointHandoff(b *testing.B) {
	for _, size := range [][2]int{{10, 100}, {1000, 100}} {
		pairs := size[0] * size[1]
		s := burstState(size[0], size[1])
		live := NewLive(s)
		snap := live.Load()
		b.Run(fmt.Sprintf("writer-marshal/pairs=%d", pairs), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = s.MarshalCheckpoint()
			}
		})
		b.Run(fmt.Sprintf("writer-handoff/pairs=%d", pairs), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = s.CheckpointOf(snap)
			}
		})
		for _, c := range s.creds {
			for _, p := range c.pairs {
				s.listStale(p)
			}
		}
		b.Run(fmt.Sprintf("writer-handoff-all-stale/pairs=%d", pairs), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = s.CheckpointOf(snap)
			}
		})
		cp, err := s.CheckpointOf(snap)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("checkpointer-marshal-all-stale/pairs=%d", pairs), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = cp.MarshalCheckpoint()
			}
		})
	}
}
