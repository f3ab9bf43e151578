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
	got, err := snap.MarshalCheckpoint()
	if err != nil {
		c.t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		c.t.Fatalf("at %s the published snapshot's checkpoint differs from the state's:\n%s", st.pos, firstDiff(got, want))
	}
	if full, _ := st.Snapshot().MarshalCheckpoint(); !bytes.Equal(full, want) {
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
	data, err := c.live.Load().MarshalCheckpoint()
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
