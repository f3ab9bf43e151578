package projections

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// failingNames is n outcomes of a 500 on distinct made-up models of c1,
// after an admin ban on name-00005 (a record holding a ban) and a cooldown
// on name-00006, and with c2 failing on three of the names.
func failingNames(n int) []domain.Event {
	evs := []domain.Event{
		adminBan(0, "b1", "c1", "name-00005", "abuse", time.Hour),
		cooldown(0, "c1", "name-00006", time.Hour),
	}
	for i := range n {
		evs = append(evs, outcome(time.Duration(i)*time.Millisecond, "c1", fmt.Sprintf("name-%05d", i), 500))
	}
	for i := range 3 {
		evs = append(evs, outcome(time.Minute, "c2", fmt.Sprintf("name-%05d", i), 500))
	}
	return numbered(evs...)
}

// 20,000 names that each failed once on one credential leave it at most
// maxPairs records: the streaks that began first are forgotten first, the
// banned and cooling pairs never; the forgotten records are counted, the
// model records go with their last pair, and the incremental snapshots,
// a full one and the checkpoint agree.
func TestCountedPairsAreForgottenPastTheBound(t *testing.T) {
	const n = 20000
	evs := failingNames(n)
	live := NewLive(NewState())
	for i, ev := range evs {
		live.Apply(ev, uint64(len(evs)-1-i)%97) // publish every 97 events, as batches end
	}
	live.Flush()
	st := live.State()
	c1 := st.creds["c1"]
	records := len(c1.pairs)
	if records > maxPairs || records <= maxPairs-forgetBatch {
		t.Fatalf("c1 keeps %d pair records, want at most %d and more than %d", records, maxPairs, maxPairs-forgetBatch)
	}
	// Kept: the ban, the cooldown and the newest streaks.
	kept := records - 2
	for i := range n {
		model := fmt.Sprintf("name-%05d", i)
		want := i == 5 || i == 6 || i >= n-kept
		if got := c1.pairs[model] != nil; got != want {
			t.Errorf("c1/%s kept %v, want %v", model, got, want)
		}
	}
	if want := uint64(n - 2 - kept); st.PairsForgotten() != want {
		t.Errorf("forgotten = %d, want %d", st.PairsForgotten(), want)
	}
	for i := range 3 {
		if c := counts(st, "c2", fmt.Sprintf("name-%05d", i)); c[500] != 1 {
			t.Errorf("c2's failures on name-%05d: %v, want {500:1}", i, c)
		}
	}
	if got := len(st.models); got != kept+1+3 {
		t.Errorf("the state keeps %d model records, want %d (the streaks', the cooling pair's, c2's)", got, kept+1+3)
	}
	if st.models["name-00000"] == nil || st.models["name-00010"] != nil {
		t.Errorf("model records: name-00000 (c2 fails on it) kept %v, name-00010 (no pair left) kept %v",
			st.models["name-00000"] != nil, st.models["name-00010"] != nil)
	}

	snap, full := live.Load(), st.Snapshot()
	if !slices.Equal(snap.Pairs(), full.Pairs()) || len(snap.Pairs()) != records+3 {
		t.Fatalf("the incremental snapshot lists %d pairs, a full one %d, want %d", len(snap.Pairs()), len(full.Pairs()), records+3)
	}
	if snap.ModelFailures("name-00010") != nil || len(snap.ModelFailures(fmt.Sprintf("name-%05d", n-1))) != 1 {
		t.Errorf("the snapshot's model windows: a dropped model %v, a kept one %v",
			snap.ModelFailures("name-00010"), snap.ModelFailures(fmt.Sprintf("name-%05d", n-1)))
	}
	if snap.PairsForgotten() != st.PairsForgotten() {
		t.Errorf("the snapshot says %d forgotten, the state %d", snap.PairsForgotten(), st.PairsForgotten())
	}
	if len(snap.Bans(at(time.Minute))) != 1 {
		t.Errorf("bans = %d, want the admin ban", len(snap.Bans(at(time.Minute))))
	}
	ck, err := st.MarshalCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	if len(ck) > 1<<20 {
		t.Errorf("the checkpoint is %d bytes after %d failing names", len(ck), n)
	}
	restored, err := UnmarshalCheckpoint(ck)
	if err != nil {
		t.Fatal(err)
	}
	sameState(t, "restored from its checkpoint", st, restored)
	if restored.PairsForgotten() != st.PairsForgotten() {
		t.Errorf("the checkpoint keeps %d forgotten, want %d", restored.PairsForgotten(), st.PairsForgotten())
	}
	t.Logf("%d failing names: %d pair records on c1, %d forgotten, %d model records, checkpoint %d bytes",
		n, records, st.PairsForgotten(), len(st.models), len(ck))
}

// fill is a state whose credential c1 holds quiet records of the names
// quiet-0..quiet-(q-1) (each succeeded while c1 was small) and then
// failure streaks on fail-0..fail-(f-1), in that order.
func fill(q, f int, extra ...domain.Event) []domain.Event {
	var evs []domain.Event
	for i := range q {
		evs = append(evs, outcome(0, "c1", fmt.Sprintf("quiet-%04d", i), 200))
	}
	for i := range f {
		evs = append(evs, outcome(time.Second, "c1", fmt.Sprintf("fail-%04d", i), 500))
	}
	return append(evs, extra...)
}

// forgot is the drops of c1's counted records fail-from..fail-(to-1).
func forgot(from, to int) []PairDrop {
	var out []PairDrop
	for i := from; i < to; i++ {
		out = append(out, PairDrop{Key: domain.Key{Credential: "c1", Model: fmt.Sprintf("fail-%04d", i)}, Forgotten: true})
	}
	return out
}

// quietDrops is the drops of c1's records holding nothing quiet-i for
// each i in from..to-1 but those in except.
func quietDrops(from, to int, except ...int) []PairDrop {
	var out []PairDrop
	for i := from; i < to; i++ {
		if !slices.Contains(except, i) {
			out = append(out, PairDrop{Key: domain.Key{Credential: "c1", Model: fmt.Sprintf("quiet-%04d", i)}})
		}
	}
	return out
}

// What a new record at the bound drops, and in which order: forgetBatch
// records, those holding nothing first, least recently used first, then
// the counted records by the position their streak began at, never a
// record holding a ban, a cooldown or a guard; a credential whose records
// all hold more than counts goes past the bound. The Change of the step
// lists the drops.
func TestTheBoundDropsInOrder(t *testing.T) {
	shadow := func(cred, model string) domain.Event {
		b := autoBan(time.Second, "sh-"+model, cred, model, 500, time.Hour).Ban
		return domain.Event{V: domain.SchemaVersion, Kind: domain.KindBanShadowed, ID: "sh-" + model, At: at(time.Second), Shadowed: b}
	}
	bans := func(n int) []domain.Event {
		var evs []domain.Event
		for i := range n {
			evs = append(evs, adminBan(0, fmt.Sprintf("b%d", i), "c1", fmt.Sprintf("ban-%04d", i), "x", time.Hour))
		}
		return evs
	}
	for name, tc := range map[string]struct {
		evs  []domain.Event
		last domain.Event
		// want is the Change's drops; records the pairs c1 keeps after.
		want    []PairDrop
		records int
	}{
		"below the bound nothing goes": {
			evs: fill(0, maxPairs-1), last: outcome(time.Minute, "c1", "new", 500), records: maxPairs,
		},
		"at the bound the first streaks go": {
			evs: fill(0, maxPairs), last: outcome(time.Minute, "c1", "new", 500), records: maxPairs - forgetBatch + 1,
			want: forgot(0, forgetBatch),
		},
		"the least recently used quiet records go first": {
			evs:  fill(maxPairs, 0, outcome(time.Second, "c1", "quiet-0000", 200), outcome(time.Second, "c1", "quiet-0005", 200)),
			last: outcome(time.Minute, "c1", "new", 200), records: maxPairs - forgetBatch + 1,
			want: quietDrops(1, forgetBatch+2, 5),
		},
		"quiet records go before any streak, however recently used": {
			evs: append(fill(0, maxPairs-3), outcome(2*time.Second, "c1", "quiet-0000", 200),
				outcome(2*time.Second, "c1", "quiet-0001", 200), outcome(2*time.Second, "c1", "quiet-0002", 200)),
			last: outcome(time.Minute, "c1", "new", 500), records: maxPairs - forgetBatch + 1,
			want: append(quietDrops(0, 3), forgot(0, forgetBatch-3)...),
		},
		"a streak that ended leaves a quiet record used at its end": {
			evs:  fill(maxPairs-1, 0, outcome(time.Second, "c1", "fail-0000", 500), outcome(2*time.Second, "c1", "fail-0000", 200)),
			last: outcome(time.Minute, "c1", "new", 500), records: maxPairs - forgetBatch + 1,
			want: quietDrops(0, forgetBatch),
		},
		"a streak begun again is younger": {
			evs:  fill(0, maxPairs, outcome(2*time.Second, "c1", "fail-0000", 200), outcome(3*time.Second, "c1", "fail-0000", 500)),
			last: outcome(time.Minute, "c1", "new", 500), records: maxPairs - forgetBatch + 1,
			want: forgot(1, forgetBatch+1),
		},
		"a ban, a cooldown and a guard are never forgotten": {
			evs: append([]domain.Event{
				outcome(0, "c1", "held-0", 500), adminBan(0, "b", "c1", "held-0", "x", time.Hour),
				outcome(0, "c1", "held-1", 500), cooldown(0, "c1", "held-1", time.Hour),
				outcome(0, "c1", "held-2", 500), shadow("c1", "held-2"),
			}, fill(0, maxPairs-3)...),
			last: outcome(time.Minute, "c1", "new", 500), records: maxPairs - forgetBatch + 1,
			want: forgot(0, forgetBatch),
		},
		"records holding bans go past the bound": {
			evs: bans(maxPairs), last: adminBan(time.Minute, "b-new", "c1", "new", "x", time.Hour), records: maxPairs + 1,
		},
		"another credential is not touched": {
			evs: fill(0, maxPairs), last: outcome(time.Minute, "c2", "new", 500), records: maxPairs,
		},
	} {
		t.Run(name, func(t *testing.T) {
			st := fold(numbered(tc.evs...))
			last := tc.last
			last.Seq = uint64(len(tc.evs) + 1)
			st, ch := ApplyReport(st, last)
			if !slices.Equal(ch.Dropped, tc.want) {
				t.Errorf("dropped %v, want %v", ch.Dropped, tc.want)
			}
			if got := len(st.creds["c1"].pairs); got != tc.records {
				t.Errorf("c1 keeps %d records, want %d", got, tc.records)
			}
			snap := st.Snapshot()
			for _, d := range tc.want {
				if st.creds["c1"].pairs[d.Key.Model] != nil || snap.Named(d.Key) {
					t.Errorf("%s is still named", d.Key)
				}
			}
		})
	}
}

// reusedNames is 3*maxPairs new names quiet-i succeeding on c1, each
// even one followed by a success of the older quiet-(i/2) and every
// fifth by a failure of fail-i: past the bound the records holding
// nothing go least recently used first, and the streaks stay.
func reusedNames() []domain.Event {
	var evs []domain.Event
	for i := range 3 * maxPairs {
		evs = append(evs, outcome(time.Duration(i)*time.Millisecond, "c1", fmt.Sprintf("quiet-%04d", i), 200))
		if i%2 == 0 {
			evs = append(evs, outcome(time.Duration(i)*time.Millisecond, "c1", fmt.Sprintf("quiet-%04d", i/2), 200))
		}
		if i%5 == 0 {
			evs = append(evs, outcome(time.Duration(i)*time.Millisecond, "c1", fmt.Sprintf("fail-%04d", i), 500))
		}
	}
	return numbered(evs...)
}

// Dropping is part of the fold: folding every event and folding part,
// saving and restoring a checkpoint (which keeps each record's last use),
// then the rest give the same state, wherever the cut, for names that
// fail (the oldest streaks forgotten) and names used again (the least
// recently used quiet records dropped); a forgotten name that fails again
// is counted from a fresh record; Apply and ApplyReport fold alike.
func TestForgettingIsDeterministic(t *testing.T) {
	failing := failingNames(2*maxPairs + 500)
	for range 2 {
		ev := outcome(2*time.Minute, "c1", "name-00001", 500)
		ev.Seq = uint64(len(failing) + 1)
		failing = append(failing, ev)
	}
	reused := reusedNames()
	for name, evs := range map[string][]domain.Event{"failing names": failing, "names used again": reused} {
		whole := fold(evs)
		for _, cut := range []int{1, maxPairs - 1, maxPairs + 3, 2 * maxPairs, len(evs) / 2, len(evs) - 1} {
			part := fold(evs[:cut])
			ck, err := part.MarshalCheckpoint()
			if err != nil {
				t.Fatal(err)
			}
			restored, err := UnmarshalCheckpoint(ck)
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs[cut:] {
				restored, _ = ApplyReport(restored, ev)
			}
			sameState(t, fmt.Sprintf("%s folded whole vs. through a checkpoint at %d", name, cut), whole, restored)
		}
	}
	whole := fold(failing)
	if c := counts(whole, "c1", "name-00001"); c[500] != 2 {
		t.Errorf("the forgotten name failing again: counts %v, want {500:2}", c)
	}
	// quiet-2999, made at i = 2999, was used again at the end; quiet-3001,
	// made just after it, never was. The 1,200 streaks all stay.
	rs := fold(reused)
	c1 := rs.creds["c1"]
	if c1.pairs["quiet-2999"] == nil || c1.pairs["quiet-3001"] != nil {
		t.Errorf("kept quiet-2999 (used last) %v, quiet-3001 (used once, long ago) %v; want true, false",
			c1.pairs["quiet-2999"] != nil, c1.pairs["quiet-3001"] != nil)
	}
	streaks := 0
	for _, p := range c1.pairs {
		if len(p.counts) > 0 {
			streaks++
		}
	}
	if streaks != 3*maxPairs/5 || len(c1.pairs) > maxPairs || rs.PairsForgotten() != 0 {
		t.Errorf("c1 keeps %d streaks in %d records, %d forgotten; want all %d in at most %d, none forgotten",
			streaks, len(c1.pairs), rs.PairsForgotten(), 3*maxPairs/5, maxPairs)
	}
}

// A state holding more counted records than maxPairs (a checkpoint written
// before the bound) comes back under it at the credential's next new
// record, forgetting the oldest streaks, in one step.
func TestAStateAboveTheBoundComesBackUnderIt(t *testing.T) {
	st := NewState()
	c := st.cred("c1")
	for i := range maxPairs + 500 {
		st.count(st.newPair(c, fmt.Sprintf("old-%05d", i)), 500, domain.Pos{Seq: uint64(i + 1)})
	}
	st.pos = domain.Pos{Seq: maxPairs + 500}
	ev := outcome(time.Minute, "c1", "new", 500)
	ev.Seq = maxPairs + 501
	st, ch := ApplyReport(st, ev)
	if got := len(st.creds["c1"].pairs); got != maxPairs-forgetBatch+1 {
		t.Fatalf("c1 keeps %d records, want %d", got, maxPairs-forgetBatch+1)
	}
	const n = 500 + forgetBatch
	if len(ch.Dropped) != n || ch.Dropped[0].Key.Model != "old-00000" || ch.Dropped[n-1].Key.Model != fmt.Sprintf("old-%05d", n-1) {
		t.Fatalf("dropped %d, first %v, last %v; want old-00000..old-%05d", len(ch.Dropped), ch.Dropped[0], ch.Dropped[len(ch.Dropped)-1], n-1)
	}
	if st.PairsForgotten() != n {
		t.Errorf("forgotten = %d, want %d", st.PairsForgotten(), n)
	}
}

// BenchmarkFoldFailingNames folds 20,000 names failing once on one
// credential: the cost of the bound's scans.
func BenchmarkFoldFailingNames(b *testing.B) {
	evs := failingNames(20000)
	b.ReportAllocs()
	for b.Loop() {
		fold(evs)
	}
}
