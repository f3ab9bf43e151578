package main

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/adminapi"
	"github.com/airouter/airouter/internal/testkit"
	"github.com/airouter/airouter/transport/eventlog"
)

// BenchmarkPastView1M answers GET /health?at=T the way the router does
// (logHistory's fold over the router's own eventlog.Log, rendered by
// adminapi.PastView) on a store of 1,000,000 events written through the
// eventlog publisher (syntheticLog: outcomes and the decisions taken on
// them, a checkpoint at the 950,000th):
//
//	go test ./cmd/airouter -run XXX -bench PastView1M -benchtime 3x
//
// from-start is a moment before the checkpoint (the 900,000th event: the
// fold reads every event up to it); from-checkpoint is the 990,000th (the
// fold starts at the checkpoint and reads 40,000 events). Besides the
// time, it reports the process's CPU time per answer (the embedded
// nats-server's included: the time on a loaded machine) and the heap the
// folded state holds.
func BenchmarkPastView1M(b *testing.B) {
	const n = 1_000_000
	store := filepath.Join(b.TempDir(), "data")
	evs := syntheticLog(b, store, n, 950_000)
	ctx := context.Background()
	lg, err := eventlog.Open(ctx, eventlog.Options{StoreDir: store, MaxBytes: 4 << 30, Logger: hclog.NewNullLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer lg.Close(ctx)
	h := newLogHistory(lg)
	for _, tc := range []struct {
		name string
		at   int
	}{{"from-start", 900_000}, {"from-checkpoint", 990_000}} {
		b.Run(tc.name, func(b *testing.B) {
			at := evs[tc.at-1].At
			b.ReportAllocs()
			base := heapAfterGC()
			cpu0 := testkit.ProcessCPU()
			var held uint64
			for i := 0; i < b.N; i++ {
				st, err := h.StateAt(ctx, at)
				if err != nil {
					b.Fatal(err)
				}
				if st.Pos() != foldedBy(evs, at) {
					b.Fatalf("folded to %v, want %v", st.Pos(), foldedBy(evs, at))
				}
				if _, _, err := adminapi.PastView(adminapi.Deps{}, st.Snapshot(), at, "/health"); err != nil {
					b.Fatal(err)
				}
				held = max(held, heapAfterGC()-min(base, heapAfterGC()))
				runtime.KeepAlive(st)
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/answer")
			b.ReportMetric((testkit.ProcessCPU()-cpu0).Seconds()/float64(b.N), "cpu-s/answer")
			b.ReportMetric(float64(held)/(1<<20), "MiB-held")
		})
	}
}

// heapAfterGC is the live heap after a collection.
func heapAfterGC() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
