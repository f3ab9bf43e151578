package projections

import (
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// A ban on one credential of 1,000 redoes the block index's shard of that
// credential and shares every other shard with the previous snapshot, so
// the swap allocates a shard's worth of entries (about 1,000/credShards),
// not a copy of the map of all 1,000: well under the 32 KB such a copy
// (55 KB measured at 1,000 credentials) takes.
func TestABanCopiesOnlyItsShardOfTheBlockIndex(t *testing.T) {
	const creds = 1000
	live := NewLive(nil)
	seq := uint64(0)
	apply := func(ev domain.Event, pending uint64) *Snapshot {
		seq++
		ev.Seq = seq
		live.Apply(ev, pending)
		return live.Load()
	}
	for c := range creds {
		apply(outcome(time.Duration(c)*time.Millisecond, fmt.Sprintf("c-%04d", c), "m", 500), 1)
	}
	live.Flush()

	prev := live.Load()
	const banned = "c-0421"
	next := apply(autoBan(2*time.Second, "b-shard", banned, "m", 500, time.Hour), 0)
	if b, ok := next.Blocked(banned, "m", at(3*time.Second)); !ok || b.Until.IsZero() {
		t.Fatalf("%s/m is not banned after the ban: %+v %v", banned, b, ok)
	}
	mine := shardOf(banned)
	for i := range credShards {
		same := reflect.ValueOf(prev.index.creds[i]).UnsafePointer() == reflect.ValueOf(next.index.creds[i]).UnsafePointer()
		if i == mine && same {
			t.Errorf("shard %d, holding %s, is shared: the ban did not copy it", i, banned)
		}
		if i != mine && !same {
			t.Errorf("shard %d, without %s, was copied by its ban", i, banned)
		}
	}

	const n = 100
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range n {
		c := fmt.Sprintf("c-%04d", i*7%creds)
		d := time.Duration(3+i) * time.Second
		apply(autoBan(d, fmt.Sprintf("b-%d", i), c, "m", 500, time.Hour), 0)
	}
	runtime.ReadMemStats(&after)
	perBan := (after.TotalAlloc - before.TotalAlloc) / n
	t.Logf("a ban on one credential of %d: %d bytes per swap", creds, perBan)
	if perBan > 32<<10 {
		t.Errorf("a ban on one credential of %d allocates %d bytes per swap, more than 32 KB: the index's credentials were copied whole", creds, perBan)
	}
}
