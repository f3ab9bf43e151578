package decisions

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/projections"
)

// TestDecisionQueueMemory checks what the decision queue costs before any
// decision: a channel's buffer is allocated whole, so a queue of whole
// decisions would hold DefaultQueue events resident in every router; the
// queue of pointers holds a word a slot.
func TestDecisionQueueMemory(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	e, err := New(Config{Log: newMemLog(), Snapshot: func() *projections.Snapshot { return nil }, Clock: clockwork.NewFakeClock()})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(e)
	whole := uint64(DefaultQueue) * uint64(unsafe.Sizeof(decision{}))
	limit := uint64(DefaultQueue)*8 + 64<<10
	if got := after.TotalAlloc - before.TotalAlloc; got > limit {
		t.Errorf("an engine with the default queue allocated %d bytes, want at most %d (whole decisions would take %d)", got, limit, whole)
	}
}
