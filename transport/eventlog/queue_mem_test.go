package eventlog

import (
	"runtime"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// TestPublishQueueMemory checks what the publish queue costs before any
// event: a channel's buffer is allocated whole and, as events pass, its
// ring is written end to end, so all of it becomes resident. At the
// default queue_size (65536) whole pubItems took about 7 MB of every
// airouter's memory; the queue of pointers takes 512 KB.
func TestPublishQueueMemory(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	p := newPublisher(nil, hclog.NewNullLogger(), &lastError{}, DefaultQueueSize)
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(p)
	const limit = 1 << 20
	if got := after.TotalAlloc - before.TotalAlloc; got > limit {
		t.Errorf("a publisher with queue_size %d allocated %d bytes, want at most %d", DefaultQueueSize, got, limit)
	}
}
