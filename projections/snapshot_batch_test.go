package projections

import (
	"bytes"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"
)

// A publish of many changes to one tree (a replay's batch) copies the tree
// once rather than the path to every changed key: 1,000 of a credential's
// 1,999 pairs (and their models) changed between two publishes allocate,
// per changed pair, well under half what a publish of one changed pair
// does, where a path copy per key would cost about that publish each. The
// batch's snapshot equals a full one, shares every untouched record with
// the snapshot before it, and leaves that snapshot as it was.
func TestABatchedPublishCopiesTheTreeOnce(t *testing.T) {
	const pairs, changed = maxPairs - 1, 1000
	model := func(i int) string { return fmt.Sprintf("m-%04d", i) }
	s := NewState()
	for i := range pairs {
		s = Apply(s, outcome(time.Duration(i)*time.Millisecond, "c", model(i), 500))
	}
	now := at(time.Hour)
	prev := s.SnapshotAfter(nil)
	prevView := viewJSON(t, prev, now)
	for i := range changed {
		s = Apply(s, outcome(10*time.Second+time.Duration(i)*time.Millisecond, "c", model(2*i), 500))
	}
	batch, next := publishBytes(s, prev)
	if !bytes.Equal(viewJSON(t, next, now), viewJSON(t, s.Snapshot(), now)) {
		t.Fatal("the batch's snapshot differs from a full snapshot of the same state")
	}
	if !bytes.Equal(viewJSON(t, prev, now), prevView) {
		t.Fatal("the batch's publish changed the snapshot it was built from")
	}
	got := compareSnapshots(prev, next)
	if n := len(got.fresh); n != 1+2*changed {
		t.Errorf("%d records fresh, want the credential, the %d changed pairs and their models (%d)", n, changed, 1+2*changed)
	}
	if n := len(got.shared); n != 2*(pairs-changed) {
		t.Errorf("%d records shared, want every untouched pair and model (%d)", n, 2*(pairs-changed))
	}
	for i := range pairs {
		want := []codeCount{{500, 1}}
		if counts := lookup(lookup(prev.creds, "c").pairs, model(i)).frozenCounts; !slices.Equal(counts, want) {
			t.Fatalf("the previous snapshot's %s counts %v, want %v", model(i), counts, want)
		}
		if i%2 == 0 && i < 2*changed {
			want = []codeCount{{500, 2}}
		}
		if counts := lookup(lookup(next.creds, "c").pairs, model(i)).frozenCounts; !slices.Equal(counts, want) {
			t.Fatalf("the batch's %s counts %v, want %v", model(i), counts, want)
		}
	}

	s = Apply(s, outcome(20*time.Second, "c", model(1), 500))
	one, _ := publishBytes(s, next)
	t.Logf("a publish of %d changed pairs: %d bytes a pair; of one: %d bytes", changed, batch/changed, one)
	if batch/changed > one/2 {
		t.Errorf("a publish of %d changed pairs allocates %d bytes a pair, more than half the %d of a publish of one", changed, batch/changed, one)
	}
}

// publishBytes is s.SnapshotAfter(prev) and the heap it allocated.
func publishBytes(s *State, prev *Snapshot) (uint64, *Snapshot) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	next := s.SnapshotAfter(prev)
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, next
}
