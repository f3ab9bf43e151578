package projections

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// sharing compares two snapshots record by record: the credentials, pairs
// and models next holds the very record (pointer) of prev for, and those it
// holds a different record for or that only one of them holds.
type sharing struct {
	shared, fresh map[string]bool
}

func compareSnapshots(prev, next *Snapshot) sharing {
	s := sharing{shared: map[string]bool{}, fresh: map[string]bool{}}
	note := func(key string, same bool) {
		if same {
			s.shared[key] = true
		} else {
			s.fresh[key] = true
		}
	}
	for c := range values(next.creds) {
		old := lookup(prev.creds, c.name)
		note("cred "+c.name, old == c)
		for p := range values(c.pairs) {
			var was *pairRec
			if old != nil {
				was = lookup(old.pairs, p.model)
			}
			note("pair "+c.name+"/"+p.model, was == p)
		}
	}
	for c := range values(prev.creds) {
		for p := range values(c.pairs) {
			if !next.Named(domain.Key{Credential: c.name, Model: p.model}) {
				note("pair "+c.name+"/"+p.model, false)
			}
		}
	}
	for m := range values(next.models) {
		note("model "+m.name, lookup(prev.models, m.name) == m)
	}
	return s
}

// A snapshot published after an event holds the same records as its
// predecessor, by pointer through its trees, for every credential, pair
// and model the event did not touch; only the touched pair, its
// credential and (when its failure window changed) its model are fresh.
// A pair the fold dropped (prune.go) is absent from the next snapshot,
// and its credential's other records are still shared.
func TestSnapshotSharesUntouchedRecords(t *testing.T) {
	live := NewLive(nil)
	seq := uint64(0)
	apply := func(ev domain.Event) *Snapshot {
		t.Helper()
		seq++
		ev.Seq = seq
		live.Apply(ev, 0)
		if live.Load().Seq() != seq {
			t.Fatalf("event %d did not publish a snapshot", seq)
		}
		return live.Load()
	}
	for c := range 3 {
		for m := range 40 {
			apply(outcome(time.Duration(c*40+m)*time.Millisecond, fmt.Sprintf("c-%d", c), fmt.Sprintf("m-%02d", m), 500))
		}
	}
	prev := live.Load()
	next := apply(outcome(time.Second, "c-1", "m-07", 500))
	got := compareSnapshots(prev, next)
	wantFresh := map[string]bool{"cred c-1": true, "pair c-1/m-07": true, "model m-07": true}
	if fmt.Sprint(got.fresh) != fmt.Sprint(wantFresh) {
		t.Errorf("an outcome on c-1/m-07 gave fresh records %v, want %v", got.fresh, wantFresh)
	}
	if n := len(got.shared); n != 3+3*40+40-3 {
		t.Errorf("%d records shared, want every untouched one (%d)", n, 3+3*40+40-3)
	}
	if counts := lookup(lookup(next.creds, "c-1").pairs, "m-07").frozenCounts; !slices.Equal(counts, []codeCount{{500, 2}}) {
		t.Errorf("the fresh pair counts %v, want 2 x 500", counts)
	}
	if counts := lookup(lookup(prev.creds, "c-1").pairs, "m-07").frozenCounts; !slices.Equal(counts, []codeCount{{500, 1}}) {
		t.Errorf("the previous snapshot's pair changed: counts %v, want 1 x 500", counts)
	}

	// At maxPairs records of c-2 a new name drops the forgetBatch least
	// recently used records holding nothing: not q-0003, whose ban was
	// imposed and lifted after the others were made.
	for i := range maxPairs - 40 {
		apply(outcome(2*time.Second, "c-2", fmt.Sprintf("q-%04d", i), 200))
	}
	apply(adminBan(3*time.Second, "b1", "c-2", "q-0003", "abuse", time.Hour))
	apply(unban(4*time.Second, "c-2", "q-0003"))
	prev = live.Load()
	next = apply(outcome(5*time.Second, "c-2", "q-new", 200))
	wantFresh = map[string]bool{"cred c-2": true, "pair c-2/q-new": true}
	for i := range forgetBatch + 1 {
		if i == 3 {
			continue
		}
		gone := domain.Key{Credential: "c-2", Model: fmt.Sprintf("q-%04d", i)}
		wantFresh["pair c-2/"+gone.Model] = true
		if !prev.Named(gone) || next.Named(gone) || slices.Contains(next.PairsOf("c-2"), gone) {
			t.Fatalf("the dropped pair %s: named before %v, after %v; want true, false", gone, prev.Named(gone), next.Named(gone))
		}
	}
	if kept := (domain.Key{Credential: "c-2", Model: "q-0003"}); !next.Named(kept) {
		t.Errorf("%s, used after the others, was dropped", kept)
	}
	got = compareSnapshots(prev, next)
	if fmt.Sprint(got.fresh) != fmt.Sprint(wantFresh) {
		t.Errorf("a new name dropping %d pairs of c-2 gave fresh records %v, want %v", forgetBatch, got.fresh, wantFresh)
	}
}

// swapBytes is the mean heap allocated by Live.Apply of one failed outcome
// with nothing pending (so it publishes a snapshot), over a pool of creds x
// models pairs every one of which failed once; the outcomes go to pairs
// spread over the pool, each changing its pair, credential and model.
func swapBytes(t *testing.T, creds, models int) uint64 {
	t.Helper()
	live := NewLive(nil)
	seq := uint64(0)
	apply := func(c, m int, pending uint64) {
		seq++
		ev := outcome(time.Duration(seq)*time.Millisecond, fmt.Sprintf("c-%04d", c), fmt.Sprintf("m-%04d", m), 500)
		ev.Seq = seq
		live.Apply(ev, pending)
	}
	for c := range creds {
		for m := range models {
			apply(c, m, 1)
		}
	}
	live.Flush()
	const n = 200
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range n {
		k := i * 7919 % (creds * models)
		apply(k/models, k%models, 0)
	}
	runtime.ReadMemStats(&after)
	if live.Load().Seq() != seq {
		t.Fatal("the last outcome did not publish")
	}
	return (after.TotalAlloc - before.TotalAlloc) / n
}

// A snapshot swap allocates for the records the event touched, not for
// the pool: an outcome on a pool of 20,000 pairs (1,000 credentials, or a
// credential of 1,000 models) costs about what it costs on 100 pairs,
// where copying the maps of credentials, of a credential's pairs or of
// models grows with them.
func TestSwapCostDoesNotGrowWithThePool(t *testing.T) {
	small := swapBytes(t, 10, 10)
	for _, pool := range []struct{ creds, models int }{{1000, 20}, {2, 1000}} {
		got := swapBytes(t, pool.creds, pool.models)
		t.Logf("%d credentials x %d models: %d bytes per swap (100 pairs: %d)", pool.creds, pool.models, got, small)
		if got > 2*small+2048 {
			t.Errorf("%d credentials x %d models: a swap allocates %d bytes, more than twice the %d of 100 pairs", pool.creds, pool.models, got, small)
		}
	}
}

// The zero Snapshot answers every query as an empty one, as it did with
// nil maps: nothing named, nothing blocked, no panic.
func TestTheZeroSnapshotIsEmpty(t *testing.T) {
	var s Snapshot
	k := domain.Key{Credential: "c", Model: "m"}
	if s.Named(k) || len(s.Pairs()) != 0 || len(s.PairsOf("c")) != 0 || len(s.Credentials()) != 0 ||
		len(s.Bans(at(0))) != 0 || len(s.Benched(at(0))) != 0 || s.ModelFailures("m") != nil {
		t.Error("the zero snapshot names something")
	}
	if _, ok := s.Blocked("c", "m", at(0)); ok {
		t.Error("the zero snapshot blocks a pair")
	}
	if v := s.Pair(k, at(0)); v.Banned || v.ErrorCodeCounts != nil {
		t.Errorf("the zero snapshot's pair view: %+v", v)
	}
	if len(s.ExpiredBans(at(0))) != 0 || len(s.DueProbes(at(0), domain.RecoveryPolicy{}, "r")) != 0 {
		t.Error("the zero snapshot has expired bans or due probes")
	}
	s.StateView(at(0))
}
