package projections

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/airouter/airouter/domain"
)

// The block index Live keeps by redoing only the entries an event touches
// is, after every publish, the index a full rebuild of the same state gives.
func TestPropertyIncrementalIndexIsTheFullRebuild(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		evs := genLog(t)
		live := NewLive(nil)
		ref := NewState()
		for i, ev := range evs {
			ref = Apply(ref, ev)
			live.Apply(ev, uint64(rapid.IntRange(0, 2).Draw(t, "pending")))
			if snap := live.Load(); snap.Seq() == ref.Seq() {
				if full := ref.Snapshot(); !reflect.DeepEqual(snap.index, full.index) {
					t.Fatalf("after event %d (%s): incremental index\n%s\nfull rebuild\n%s", i, ev.Kind, dumpIndex(snap.index), dumpIndex(full.index))
				}
			}
		}
	})
}

// A credential of many pairs: new pairs, a ban, a cooldown, an unban and
// pairs dropped at maxPairs keep the index equal to a full rebuild (after
// the first events, every 97th, those around the unban and from just
// before the bound on), and it holds entries only for the pairs with a
// ban or a cooldown.
func TestIncrementalIndexOnALargeCredential(t *testing.T) {
	live := NewLive(nil)
	ref := NewState()
	seq := uint64(0)
	apply := func(ev domain.Event) {
		t.Helper()
		seq++
		ev.Seq = seq
		ref = Apply(ref, ev)
		live.Apply(ev, 0)
		if i := seq; i > 20 && i%97 != 0 && (i < 495 || i > 510) && i < maxPairs-5 {
			return
		}
		if full := ref.Snapshot(); !reflect.DeepEqual(live.Load().index, full.index) {
			t.Fatalf("after event %d (%s): incremental index\n%s\nfull rebuild\n%s", seq, ev.Kind, dumpIndex(live.Load().index), dumpIndex(full.index))
		}
	}
	for i := range maxPairs + 50 {
		apply(outcome(time.Duration(i)*time.Millisecond, "c", fmt.Sprintf("m-%04d", i), 200))
		if i == 10 {
			apply(autoBan(time.Second, "ban/c/m-0003", "c", "m-0003", 429, time.Hour))
			apply(cooldown(time.Second, "c", "m-0005", time.Minute))
		}
		if i == 500 {
			apply(unban(2*time.Second, "c", "m-0003"))
		}
	}
	if got := len(live.Load().index.cred("c").pairs); got != 1 {
		t.Errorf("the index holds %d entries of c, want 1 (the cooldown of m-0005)", got)
	}
}

func dumpIndex(ix blockIndex) string {
	s := fmt.Sprintf("bench %v\n", ix.bench)
	for name, cb := range ix.allCreds() {
		s += fmt.Sprintf("%s: wild %d/%v/%v cooldown %d probe %v pairs %+v\n", name, cb.wild, cb.wildPerm, cb.wildManual, cb.cooldown, cb.probe, cb.pairs)
	}
	return s
}
