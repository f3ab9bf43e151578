package projections

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// SnapshotAfter builds from the state's latest snapshot: it equals a full
// snapshot, shares what the events since did not touch, and leaves the
// snapshot it built from as it was. A snapshot the state has published
// past (or another state's) gets a full build, so the changes cleared by
// the publish in between are not lost.
func TestSnapshotAfterIsIncrementalAndExact(t *testing.T) {
	evs := liveLog(3000)
	s := NewState()
	for _, ev := range evs[:1000] {
		s = Apply(s, ev)
	}
	now := at(4000 * time.Second)
	first := s.SnapshotAfter(nil)
	firstView := viewJSON(t, first, now)
	// Two outcomes: a 200 on c0/m0 and a 429 on c1/m1 (liveLog's event i
	// is on c<i%20>/m<i%10>).
	s = Apply(Apply(s, evs[1000]), evs[1001])
	second := s.SnapshotAfter(first)
	if !bytes.Equal(viewJSON(t, second, now), viewJSON(t, s.Snapshot(), now)) {
		t.Fatal("SnapshotAfter differs from a full snapshot of the same state")
	}
	if !bytes.Equal(viewJSON(t, first, now), firstView) {
		t.Fatal("SnapshotAfter changed the snapshot it was built from")
	}
	if lookup(second.creds, "c7") != lookup(first.creds, "c7") {
		t.Error("an untouched credential was copied: the snapshot was built from scratch")
	}
	if lookup(lookup(second.creds, "c1").pairs, "m1") == lookup(lookup(first.creds, "c1").pairs, "m1") {
		t.Error("the pair the outcome touched is shared with the older snapshot")
	}

	// second is now the latest: first is stale.
	for _, ev := range evs[1002:2000] {
		s = Apply(s, ev)
	}
	third := s.SnapshotAfter(second)
	s = Apply(s, evs[2000]) // on c0/m0: c7's changes since first are in third only
	again := s.SnapshotAfter(first)
	if !bytes.Equal(viewJSON(t, again, now), viewJSON(t, s.Snapshot(), now)) {
		t.Fatal("SnapshotAfter of a stale snapshot misses changes")
	}
	if c7 := lookup(again.creds, "c7"); c7 == lookup(first.creds, "c7") || c7 == lookup(third.creds, "c7") {
		t.Error("a stale snapshot's successor shares records: it was not built from scratch")
	}
	if other := fold(evs[:10]).SnapshotAfter(nil); !bytes.Equal(viewJSON(t, s.SnapshotAfter(other), now), viewJSON(t, s.Snapshot(), now)) {
		t.Fatal("SnapshotAfter of another state's snapshot is not the state's own")
	}
}

// State.Pair answers as Snapshot.Pair for every pair the state names, for
// a model of a known credential it does not name, and for an unknown
// credential, while bans, cooldowns and benches are on and after they end.
func TestStatePairIsTheSnapshotsPair(t *testing.T) {
	s := fold(liveLog(2000))
	snap := s.Snapshot()
	keys := append(snap.Pairs(), domain.Key{Credential: "c1", Model: "unseen"}, domain.Key{Credential: "nobody", Model: "m3"})
	for _, now := range []time.Time{at(1990 * time.Second), at(2100 * time.Second), at(3 * time.Hour)} {
		for _, k := range keys {
			got, want := s.Pair(k, now), snap.Pair(k, now)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%v at %v: State.Pair = %+v, Snapshot.Pair = %+v", k, now, got, want)
			}
		}
	}
}
