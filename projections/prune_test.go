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

// At maxPairs records a credential drops the records that hold nothing,
// least recently used first: 20,000 names that only succeeded leave at
// most maxPairs of them (plus the banned one), the newest names, in the
// writer's state, the incremental snapshots and the checkpoint alike;
// failures and bans are kept whatever the count.
func TestQuietPairsAreDroppedAtTheBound(t *testing.T) {
	const n = 20000
	evs := numbered(quietNames(n, 200)...)
	live := NewLive(NewState())
	for i, ev := range evs {
		live.Apply(ev, uint64(len(evs)-1-i)%97) // publish every 97 events, as batches end
	}
	live.Flush()
	st := live.State()
	c1 := st.creds["c1"]
	if got := len(c1.pairs); got > maxPairs+1 || got <= maxPairs-forgetBatch {
		t.Fatalf("c1 keeps %d pair records, want at most %d and more than %d", got, maxPairs+1, maxPairs-forgetBatch)
	}
	for i := n - (maxPairs - forgetBatch); i < n; i++ {
		if c1.pairs[fmt.Sprintf("name-%05d", i)] == nil {
			t.Fatalf("c1 dropped name-%05d, one of the %d used last", i, maxPairs-forgetBatch)
		}
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
	if st.PairsForgotten() != 0 {
		t.Errorf("forgotten = %d, want 0: no dropped record held failure counts", st.PairsForgotten())
	}
	ck, err := st.MarshalCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	if len(ck) > 256<<10 {
		t.Errorf("the checkpoint is %d bytes after 20,000 names", len(ck))
	}
	t.Logf("20,000 quiet names: %d pair records on c1, checkpoint %d bytes", len(c1.pairs), len(ck))
}

// Below maxPairs no record is dropped: 1,500 names that keep succeeding,
// with a failure counted on some of them and a ban lifted on one, keep
// every record, and no event reports a drop.
func TestBelowTheBoundNothingIsDropped(t *testing.T) {
	const n = 1500
	var evs []domain.Event
	for round := range 3 {
		for i := range n {
			status := 200
			if round == 0 && i%3 == 0 {
				status = 500
			}
			evs = append(evs, outcome(time.Duration(round)*time.Second, "c1", fmt.Sprintf("name-%05d", i), status))
		}
	}
	evs = append(evs, adminBan(time.Minute, "b1", "c1", "name-00007", "abuse", time.Hour), unban(2*time.Minute, "c1", "name-00007"))
	st := NewState()
	var ch Change
	for _, ev := range numbered(evs...) {
		if st, ch = ApplyReport(st, ev); len(ch.Dropped) > 0 {
			t.Fatalf("event %d (%s) dropped %v", ev.Seq, ev.Kind, ch.Dropped)
		}
	}
	if got := len(st.creds["c1"].pairs); got != n {
		t.Errorf("c1 keeps %d records, want all %d", got, n)
	}
	if !st.Snapshot().Named(domain.Key{Credential: "c1", Model: "name-00007"}) {
		t.Error("the record of a lifted ban went below the bound")
	}
}

// A checkpoint keeps each record's last use, and one without it (every
// record used before any other) is still read.
func TestTheCheckpointKeepsTheLastUse(t *testing.T) {
	st := fold(numbered(outcome(0, "c1", "a", 200), outcome(0, "c1", "b", 500), outcome(0, "c1", "a", 200)))
	ck, err := st.MarshalCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	back, err := UnmarshalCheckpoint(ck)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := back.creds["c1"].pairs["a"].last, back.creds["c1"].pairs["b"].last; a != (domain.Pos{Seq: 3}) || b != (domain.Pos{Seq: 2}) {
		t.Fatalf("restored last uses: a %v, b %v; want 3 and 2", a, b)
	}
	old, err := UnmarshalCheckpoint([]byte(`{"version":3,"seq":3,"credentials":[{"name":"c1","pairs":[{"model":"a"}]}]}`))
	if err != nil || old.creds["c1"].pairs["a"].last != (domain.Pos{}) {
		t.Fatalf("a checkpoint without last uses: %v", err)
	}
}
