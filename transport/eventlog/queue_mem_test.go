package eventlog

import (
	"runtime"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// TestPublishQueueMemory checks what the publish queues cost before any
// event: a channel's buffer is allocated whole and, as events pass, its
// ring is written end to end, so all of it becomes resident, and the
// collector scans it in every cycle. At the default queue_size (65536)
// whole pubItems would take about 7 MB of every airouter's memory, and a
// retry queue of whole items 416 KB more; the two queues of pointers take
// 544 KB.
func TestPublishQueueMemory(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	p := newPublisher(nil, hclog.NewNullLogger(), &lastError{}, DefaultQueueSize)
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(p)
	const limit = 600 << 10
	if got := after.TotalAlloc - before.TotalAlloc; got > limit {
		t.Errorf("a publisher with queue_size %d allocated %d bytes, want at most %d", DefaultQueueSize, got, limit)
	}
}
