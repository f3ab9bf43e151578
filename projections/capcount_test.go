package projections

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/airouter/airouter/domain"
)

// modelBansByWalk is the ejection cap's count read from every pair of the
// model: the reference modelBans must agree with.
func modelBansByWalk(s *State, model string, t int64) (pairs, banned int) {
	for c, p := range s.pairsOf[model] {
		pairs++
		if c.wild.activeAt(t) || p.ban.activeAt(t) {
			banned++
		}
	}
	return pairs, banned
}

// checkHeld fails unless the cap's held bans are exactly the pair records
// of pairsOf that hold a ban, their own or their credential's, each with
// the end of the longer one, and no model keeps an empty entry.
func checkHeld(t fataler, s *State) {
	t.Helper()
	want := 0
	for model, byCred := range s.pairsOf {
		for c, p := range byCred {
			e, has := capEndOf(c, p)
			if !has {
				continue
			}
			want++
			m := s.caps[model]
			if m == nil {
				t.Fatalf("model %s: pair %s/%s holds a ban the cap does not hold", model, c.name, p.model)
			}
			if got := m.held[p]; got == nil || got.end != e {
				t.Fatalf("model %s: pair %s/%s held %+v, want %+v", model, c.name, p.model, got, e)
			}
		}
	}
	got := 0
	for model, m := range s.caps {
		if len(m.held) == 0 {
			t.Fatalf("model %s keeps an empty entry", model)
		}
		checkSplit(t, model, m)
		got += len(m.held)
	}
	if got != want {
		t.Fatalf("the cap holds %d records, want %d", got, want)
	}
}

// checkSplit fails unless every held record of m is counted once: as
// permanent, or in the heap its end puts it in at the split's time, at
// the index it records, the heaps in heap order.
func checkSplit(t fataler, model string, m *modelCap) {
	t.Helper()
	perm := 0
	for _, r := range m.held {
		h := &m.off
		switch {
		case r.end.perm:
			perm++
			continue
		case r.end.until > m.at:
			h = &m.on
		}
		if r.on != (h == &m.on) || r.i >= h.Len() || h.recs[r.i] != r {
			t.Fatalf("model %s: record %+v is not where its end (split at %d) puts it", model, r, m.at)
		}
	}
	if perm != m.perm || perm+m.on.Len()+m.off.Len() != len(m.held) {
		t.Fatalf("model %s: %d permanent + %d on + %d off, %d held", model, m.perm, m.on.Len(), m.off.Len(), len(m.held))
	}
	for _, h := range []*endHeap{&m.on, &m.off} {
		for i := 1; i < h.Len(); i++ {
			if h.Less(i, (i-1)/2) {
				t.Fatalf("model %s: heap out of order at %d", model, i)
			}
		}
	}
}

var (
	capCreds  = rapid.SampledFrom([]string{"a", "b", "c", "d", "e"})
	capModels = rapid.SampledFrom([]string{"m1", "m2"})
	capIDs    = rapid.SampledFrom([]string{"x1", "x2", "x3", "x4", "x5", "x6"})
	capDurs   = rapid.SampledFrom([]time.Duration{0, 30 * time.Second, 5 * time.Minute, time.Hour})
)

// capWorld is a state folded from random events, with the log's clock and
// the finite ends of the bans it imposed.
type capWorld struct {
	s      *State
	seq    uint64
	clock  time.Duration
	ends   []int64
	floods int
}

func (w *capWorld) apply(ev domain.Event) {
	w.seq++
	ev.Seq = w.seq
	w.s, _ = ApplyReport(w.s, ev)
}

func (w *capWorld) ban(t *rapid.T, ev domain.Event, dur time.Duration) {
	ev.ID = capIDs.Draw(t, "id")
	if dur != 0 {
		w.ends = append(w.ends, nanos(*ev.Ban.Until))
	}
	w.apply(ev)
}

// check compares modelBans with the walk at times drawn from now, a
// ban's end and a moment up to an hour either side of now.
func (w *capWorld) check(t *rapid.T, model string) {
	times := []int64{nanos(at(w.clock))}
	if len(w.ends) > 0 {
		e := rapid.SampledFrom(w.ends).Draw(t, "end")
		times = append(times, e-1, e, e+1)
	}
	times = append(times, nanos(at(w.clock+time.Duration(rapid.IntRange(-3600, 3600).Draw(t, "off"))*time.Second)))
	for range rapid.IntRange(1, 4).Draw(t, "checks") {
		tt := rapid.SampledFrom(times).Draw(t, "t")
		gp, gb := w.s.modelBans(model, tt)
		wp, wb := modelBansByWalk(w.s, model, tt)
		if gp != wp || gb != wb {
			t.Fatalf("model %s at %d: modelBans = %d of %d, the walk %d of %d", model, tt, gb, gp, wb, wp)
		}
	}
}

// step folds one random event (or none: time runs on).
func (w *capWorld) step(t *rapid.T) {
	cred, model, clock := capCreds.Draw(t, "cred"), capModels.Draw(t, "model"), w.clock
	switch rapid.IntRange(0, 12).Draw(t, "what") {
	case 0, 1:
		w.apply(outcome(clock, cred, model, rapid.SampledFrom([]int{200, 500}).Draw(t, "status")))
	case 2, 3:
		dur := capDurs.Draw(t, "dur")
		ev := autoBan(clock, "", cred, model, 500, dur)
		ev.Ban.Cap = rapid.SampledFrom([]int{0, 0, 30, 60, 99}).Draw(t, "cap")
		w.ban(t, ev, dur)
	case 4, 5:
		dur := capDurs.Draw(t, "dur")
		w.ban(t, adminBan(clock, "", cred, rapid.SampledFrom([]string{"m1", "m2", "*"}).Draw(t, "key"), "r", dur), dur)
	case 6:
		w.apply(unban(clock, cred, rapid.SampledFrom([]string{"", "*", "m1", "m2"}).Draw(t, "key")))
	case 7, 8:
		ev := expiry(clock, cred, rapid.SampledFrom([]string{"*", "m1", "m2"}).Draw(t, "key"), capIDs.Draw(t, "banid"))
		if rapid.Bool().Draw(t, "recovery") {
			ev.ID, ev.Unban.By = "recovered/"+ev.Unban.BanID, domain.LiftedByRecovery
		}
		w.apply(ev)
	case 9:
		w.apply(cooldown(clock, cred, model, time.Minute))
	case 10:
		b, err := w.s.MarshalCheckpoint()
		if err != nil {
			t.Fatal(err)
		}
		if w.s, err = UnmarshalCheckpoint(b); err != nil {
			t.Fatal(err)
		}
		checkHeld(t, w.s)
	case 11:
		if w.floods < 2 && rapid.IntRange(0, 3).Draw(t, "flood?") == 0 {
			w.flood(t, cred)
		}
	}
}

// flood names maxPairs+forgetBatch models on cred, past the bound: the
// fold forgets its least recently used records, m1's and m2's among them.
func (w *capWorld) flood(t *rapid.T, cred string) {
	w.floods++
	for i := range maxPairs + forgetBatch {
		w.apply(outcome(w.clock, cred, fmt.Sprintf("f%04d", i), 200))
	}
	checkHeld(t, w.s)
	w.check(t, "f0000")
	w.check(t, fmt.Sprintf("f%04d", maxPairs+forgetBatch-1))
}

// TestCapCountMatchesTheWalk folds random bans (of pairs and of whole
// credentials, replaced, capped), lifts (admin, expiry, recovery),
// outcomes, floods of model names past the bound (which forgets pairs of a
// credential banned whole), checkpoint round trips and time running on,
// and compares modelBans with the walk of every pair of the model at
// random times, back and forth, around the bans' ends.
func TestCapCountMatchesTheWalk(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := &capWorld{s: NewState()}
		for range rapid.IntRange(1, 80).Draw(t, "steps") {
			w.clock += time.Duration(rapid.IntRange(-30, 900).Draw(t, "dt")) * time.Second
			w.step(t)
			w.check(t, "m1")
			w.check(t, "m2")
		}
		checkHeld(t, w.s)
	})
}

// TestCapCountReadsOnlyHeldBans folds 20,000 credentials serving one
// model, a tenth of them banned, and counts the records the ejection
// cap's count moves: none while the times stay between two ban ends,
// however many counts (and capped bans refused) there are; one for each
// crossing of a ban end. Reading the model's pairs, or its bans, on each
// count would cost 20,000 or 2,000 a count.
func TestCapCountReadsOnlyHeldBans(t *testing.T) {
	const n = 20000
	s := capPool(n)
	m := s.caps["m"]
	if m == nil || len(m.held) != n/10 {
		t.Fatalf("the cap holds %v records of m, want %d", m, n/10)
	}
	ev := outcome(3*time.Second, capCred(1), "m", 500)
	s.Facts(ev)
	from := m.moves
	for i := range 1000 {
		ev.At = at(3*time.Second + time.Duration(i)*time.Millisecond)
		if f := s.Facts(ev); f.ModelPairs != n || f.ModelBanned != n/10 {
			t.Fatalf("facts = %d of %d banned", f.ModelBanned, f.ModelPairs)
		}
	}
	capped := autoBan(4*time.Second, "capped", capCred(1), "m", 500, time.Minute)
	capped.Ban.Cap = 10
	for range 100 {
		if _, ch := ApplyReport(s, capped); len(ch.Bans) != 0 {
			t.Fatalf("the cap let the ban through: %+v", ch.Bans)
		}
	}
	if moved := m.moves - from; moved != 0 {
		t.Fatalf("1,100 counts between two ban ends moved %d records, want none", moved)
	}
	end := time.Second + time.Hour // the first ban's end
	from = m.moves
	for i := range 10 {
		ev.At = at(end - time.Millisecond + time.Duration(i%2)*2*time.Millisecond)
		want := n / 10
		if i%2 == 1 {
			want-- // the first ban has ended
		}
		if f := s.Facts(ev); f.ModelBanned != want {
			t.Fatalf("facts at %v = %d banned, want %d", ev.At, f.ModelBanned, want)
		}
	}
	if moved := m.moves - from; moved > 10 {
		t.Fatalf("10 counts on either side of one ban end moved %d records, want at most 10", moved)
	}
}
