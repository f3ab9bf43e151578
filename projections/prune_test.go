package projections

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// quietNames folds n outcomes of status on distinct made-up models of one
// credential, then a second credential's failures on three of them and a
// ban on the first credential's name-0 (the pairs that hold state).
func quietNames(n, status int) []domain.Event {
	evs := make([]domain.Event, 0, n+4)
	for i := range n {
		evs = append(evs, outcome(time.Duration(i)*time.Millisecond, "c1", fmt.Sprintf("name-%05d", i), status))
	}
	for i := range 3 {
		evs = append(evs, outcome(time.Minute, "c2", fmt.Sprintf("name-%05d", i), 500))
	}
	return append(evs, adminBan(time.Minute, "b1", "c1", "name-00000", "abuse", time.Hour))
}

// Past maxQuietPairs records a credential drops the records that hold
// nothing: 20,000 names that only succeeded leave at most maxQuietPairs
// of them (plus the banned one), in the writer's state, the incremental
// snapshots and the checkpoint alike; below the bound every record stays;
// failures and bans are kept whatever the count.
func TestQuietPairsAreDroppedPastTheBound(t *testing.T) {
	evs := numbered(quietNames(20000, 200)...)
	live := NewLive(NewState())
	for i, ev := range evs {
		live.Apply(ev, uint64(len(evs)-1-i)%97) // publish every 97 events, as batches end
	}
	live.Flush()
	st := live.State()
	if got := len(st.creds["c1"].pairs); got > maxQuietPairs+1 {
		t.Fatalf("c1 keeps %d pair records, want at most %d", got, maxQuietPairs+1)
	}
	snap := live.Load()
	full := st.Snapshot()
	if !slices.Equal(snap.Pairs(), full.Pairs()) {
		t.Fatalf("the incremental snapshot lists %d pairs, a full one %d", len(snap.Pairs()), len(full.Pairs()))
	}
	if !snap.Named(domain.Key{Credential: "c1", Model: "name-00000"}) || len(snap.Bans(at(time.Minute))) != 1 {
		t.Errorf("the banned pair went: named %v, bans %d", snap.Named(domain.Key{Credential: "c1", Model: "name-00000"}), len(snap.Bans(at(time.Minute))))
	}
	for i := range 3 {
		if c := counts(st, "c2", fmt.Sprintf("name-%05d", i)); c[500] != 1 {
			t.Errorf("c2's failures on name-%05d: %v, want {500:1}", i, c)
		}
	}
	ck, err := st.MarshalCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	if len(ck) > 256<<10 {
		t.Errorf("the checkpoint is %d bytes after 20,000 names", len(ck))
	}
	t.Logf("20,000 quiet names: %d pair records on c1, checkpoint %d bytes", len(st.creds["c1"].pairs), len(ck))

	small := fold(numbered(quietNames(maxQuietPairs-10, 200)...))
	if got := len(small.creds["c1"].pairs); got != maxQuietPairs-10 {
		t.Errorf("below the bound c1 keeps %d records, want all %d", got, maxQuietPairs-10)
	}
	failing := fold(numbered(quietNames(3000, 404)...))
	if got := len(failing.creds["c1"].pairs); got > maxPairs {
		t.Errorf("3000 names with a failure counted keep %d records, want at most maxPairs (%d)", got, maxPairs)
	}
}

// The drop is part of the fold: folding every event and folding half,
// saving and restoring a checkpoint, then the rest give the same state;
// a dropped name that fails again is counted from a fresh record, and a
// lifted ban's record goes past the bound.
func TestQuietPairDropsAreDeterministic(t *testing.T) {
	evs := quietNames(3000, 200)
	evs = append(evs,
		outcome(2*time.Minute, "c1", "name-02999", 500),
		unban(3*time.Minute, "c1", "name-00000"))
	evs = numbered(evs...)
	whole := fold(evs)

	half := fold(evs[:1500])
	ck, err := half.MarshalCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	restored, err := UnmarshalCheckpoint(ck)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs[1500:] {
		restored = Apply(restored, ev)
	}
	sameState(t, "folded whole vs. through a checkpoint", whole, restored)

	if c := counts(whole, "c1", "name-02999"); c[500] != 1 {
		t.Errorf("the dropped name failing again: counts %v, want {500:1}", c)
	}
	if whole.Snapshot().Named(domain.Key{Credential: "c1", Model: "name-00000"}) {
		t.Error("the record of a lifted ban stays past the bound")
	}
}
