package eventlog

import (
	"runtime"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
)

// TestPublishQueueMemory checks what the publish queues cost before any
// event. A channel's buffer is allocated whole and, as events pass, its
// ring is written end to end, so all of it becomes resident, and the
// collector scans it in every cycle: at the default queue_size (65536) a
// channel of pointers would take 512 KB, of whole pubItems 7 MB. The
// queue grows with what is queued instead (pubQueue), so what is left is
// the retry channel's 4096 pointers, 32 KB.
func TestPublishQueueMemory(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	p := newPublisher(nil, hclog.NewNullLogger(), &lastError{}, DefaultQueueSize, clockwork.NewRealClock())
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(p)
	const limit = 48 << 10
	if got := after.TotalAlloc - before.TotalAlloc; got > limit {
		t.Errorf("a publisher with queue_size %d allocated %d bytes, want at most %d", DefaultQueueSize, got, limit)
	}
}
