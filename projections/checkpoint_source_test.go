package projections

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/airouter/airouter/domain"
)

// snapshotCheckpointer folds a log through a Live, publishing every few
// events, and checks at each snapshot published at the writer's position
// that the snapshot's checkpoint is the state's byte for byte, that a full
// snapshot's is too, and that it restores to the same state.
type snapshotCheckpointer struct {
	t interface {
		Helper()
		Fatal(...any)
		Fatalf(string, ...any)
	}
	live    *Live
	checked int
}

func (c *snapshotCheckpointer) apply(ev domain.Event, pending uint64) {
	c.t.Helper()
	c.live.Apply(ev, pending)
	c.check()
}

// check compares the published snapshot's checkpoint with the state's when
// the snapshot is at the writer's position.
func (c *snapshotCheckpointer) check() {
	c.t.Helper()
	snap, st := c.live.Load(), c.live.State()
	if snap.Pos() != st.pos {
		return
	}
	c.checked++
	want, err := st.MarshalCheckpoint()
	if err != nil {
		c.t.Fatal(err)
	}
	cp, err := st.CheckpointOf(snap)
	if err != nil {
		c.t.Fatal(err)
	}
	got, err := cp.MarshalCheckpoint()
	if err != nil {
		c.t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		c.t.Fatalf("at %s the published snapshot's checkpoint differs from the state's:\n%s", st.pos, firstDiff(got, want))
	}
	if full, _ := (&Checkpoint{snap: st.Snapshot()}).MarshalCheckpoint(); !bytes.Equal(full, want) {
		c.t.Fatalf("at %s a full snapshot's checkpoint differs from the state's:\n%s", st.pos, firstDiff(full, want))
	}
	back, err := UnmarshalCheckpoint(got)
	if err != nil {
		c.t.Fatalf("read back the snapshot's checkpoint at %s: %v", st.pos, err)
	}
	sameState(c.t, "the snapshot's checkpoint restores to another state", st, back)
}

func TestSnapshotCheckpointIsTheStatesOverTheGoldenLogs(t *testing.T) {
	for _, gc := range loadGoldenCases(t) {
		for _, every := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/every=%d", gc.name, every), func(t *testing.T) {
				c := &snapshotCheckpointer{t: t, live: NewLive(nil)}
				c.live.every, c.live.first = every, every
				for i, ev := range gc.events {
					c.apply(ev, uint64(len(gc.events)-1-i))
				}
				c.live.Flush()
				c.check()
				if c.checked == 0 {
					t.Fatal("no snapshot was checked")
				}
			})
		}
	}
}

func TestPropertySnapshotCheckpointIsTheStates(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		evs := genLog(t)
		c := &snapshotCheckpointer{t: t, live: NewLive(nil)}
		c.live.every = rapid.IntRange(1, 8).Draw(t, "every")
		for _, ev := range evs {
			c.apply(ev, uint64(rapid.IntRange(0, 3).Draw(t, "pending")))
			if rapid.IntRange(0, 9).Draw(t, "flush") == 0 {
				c.live.Flush()
				c.check()
			}
		}
	})
}

// Past the bound of pair records a credential drops the least recently
// used ones that hold nothing, then counted ones (counted as forgotten):
// the snapshot's checkpoint keeps each record's last use and the
// forgotten count, so a state restored from it drops the same records as
// the state that went on folding.
func TestSnapshotCheckpointKeepsWhatTheBoundDropsBy(t *testing.T) {
	var evs []domain.Event
	for m := range maxPairs + 1 { // cred-b forgets counted records
		evs = append(evs, outcome(0, "cred-b", fmt.Sprintf("model-%04d", m), 500))
	}
	for m := range maxPairs - 1 { // cred-a's records hold nothing
		evs = append(evs, outcome(time.Duration(m)*time.Millisecond, "cred-a", fmt.Sprintf("model-%04d", m), 200))
	}
	for m := 0; m < maxPairs-1; m += 14 { // used again: later in the order
		evs = append(evs, outcome(time.Hour, "cred-a", fmt.Sprintf("model-%04d", m), 200))
	}
	evs = numbered(evs...)
	c := &snapshotCheckpointer{t: t, live: NewLive(nil)}
	c.live.every, c.live.first = 500, 500
	for i, ev := range evs {
		c.apply(ev, uint64(len(evs)-1-i))
	}
	cp, err := c.live.State().CheckpointOf(c.live.Load())
	if err != nil {
		t.Fatal(err)
	}
	data, err := cp.MarshalCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	restored, err := UnmarshalCheckpoint(data)
	if err != nil {
		t.Fatal(err)
	}
	straight := c.live.State()
	if straight.PairsForgotten() == 0 || restored.PairsForgotten() != straight.PairsForgotten() {
		t.Fatalf("forgotten: %d folded, %d restored; want the same, above 0", straight.PairsForgotten(), restored.PairsForgotten())
	}
	for k := range forgetBatch + 1 {
		ev := outcome(2*time.Hour, "cred-a", fmt.Sprintf("new-%04d", k), 200)
		ev.Seq = uint64(len(evs) + k + 1)
		straight, restored = Apply(straight, ev), Apply(restored, ev)
	}
	if a := straight.creds["cred-a"]; a.pairs["model-0000"] == nil || a.pairs["model-0001"] != nil {
		t.Fatal("the bound did not drop the least recently used records: the case does not reach it")
	}
	sameState(t, "restored from the snapshot's checkpoint, the bound drops other records", straight, restored)
}

// firstDiff shows got and want around their first difference.
func firstDiff(got, want []byte) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(i-120, 0)
	return fmt.Sprintf("at byte %d:\ngot  ...%s\nwant ...%s", i, got[from:min(i+120, len(got))], want[from:min(i+120, len(want))])
}

// A success on a pair holding nothing changes only its last use: the
// snapshot does not copy the record, the state lists it stale, and the
// checkpoint carries its last use. The list stays within about twice the
// stale records through a long fold without a swap, a record going
// stale, copied and stale again is listed once, and the checkpoint is
// still the state's.
func TestStaleLastUsesStayBoundedAndReachTheCheckpoint(t *testing.T) {
	const quiet = 1500
	c := &snapshotCheckpointer{t: t, live: NewLive(nil)}
	seq := uint64(0)
	next := func(model string, code int, pending uint64) {
		seq++
		ev := outcome(time.Duration(seq)*time.Millisecond, "cred-a", model, code)
		ev.Seq = seq
		c.live.Apply(ev, pending)
	}
	for m := range quiet {
		next(fmt.Sprintf("quiet-%04d", m), 200, 0)
	}
	for range 6 { // a backlog: swaps only now and then
		for m := range quiet {
			next(fmt.Sprintf("quiet-%04d", m), 200, 1)
		}
		next("hot", 500, 1) // copied at a swap, then stale again
		next("hot", 200, 1)
		next("hot", 200, 1)
	}
	st := c.live.State()
	if n, most := len(st.stale), 2*(quiet+1); n > most {
		t.Fatalf("%d records listed stale, want at most %d", n, most)
	}
	for range 3 {
		next("hot", 500, 0)
		next("hot", 200, 0)
		next("hot", 200, 0) // stale again: listed once
	}
	c.check()
	if c.checked != 1 {
		t.Fatal("the last snapshot was not checked")
	}
	seen := map[*pairRec]bool{}
	for _, p := range st.stale {
		if seen[p] {
			t.Fatalf("%s listed stale twice", p.model)
		}
		seen[p] = true
	}
	if len(seen) != quiet+1 {
		t.Fatalf("%d records listed stale, want the %d used since their copy", len(seen), quiet+1)
	}
}

// CheckpointOf takes only the snapshot just published from the state.
func TestCheckpointOfRefusesAnotherSnapshot(t *testing.T) {
	live := NewLive(nil)
	live.Apply(numbered(outcome(0, "a", "m", 200))[0], 0)
	old := live.Load()
	ev := outcome(time.Second, "a", "m", 500)
	ev.Seq = 2
	live.Apply(ev, 1) // applied, not published
	for what, snap := range map[string]*Snapshot{"behind": old, "another state's": NewState().Snapshot(), "nil": nil} {
		if _, err := live.State().CheckpointOf(snap); err == nil {
			t.Errorf("%s snapshot: no error", what)
		}
	}
	live.Flush()
	if _, err := live.State().CheckpointOf(live.Load()); err != nil {
		t.Fatal(err)
	}
}
