package projections

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/airouter/airouter/domain"
)

// A pair read into one PairRead reused from pair to pair is the pair's
// Pair, on any log, at any moment: nothing of the previous pair's read
// stays, and the times and counts it points to are the pair's.
func TestPropertyReadPairIsPair(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		evs := genLog(t)
		live := NewLive(nil)
		for _, ev := range evs {
			live.Apply(ev, 0)
		}
		snap := live.Load()
		var r PairRead
		for _, now := range judged(evs) {
			for _, cred := range []string{"a", "b", "c", "z"} {
				for _, model := range []string{"m1", "m2", "m3", "m9"} {
					k := domain.Key{Credential: cred, Model: model}
					snap.ReadPair(k, now, &r)
					read := r.PairView
					read.ErrorCodeCounts = r.Counts.Map(nil)
					got, _ := json.Marshal(read)
					want, _ := json.Marshal(snap.Pair(k, now))
					if !bytes.Equal(got, want) {
						t.Fatalf("%s at %v: read\n%s\nPair\n%s", k, now, got, want)
					}
				}
			}
		}
	})
}

// codeSet draws a pair's failures per code: codes whose decimal strings
// sort unlike their numbers (1 < 97 < 429 < 1000, "1" < "1000" < "429" <
// "97") among them.
func codeSet(t *rapid.T) map[int]int {
	codes := rapid.SliceOfNDistinct(rapid.SampledFrom([]int{1, 3, 10, 97, 99, 100, 199, 300, 400, 401, 404, 408, 429, 500, 502, 503, 599, 600, 999, 1000, 4290, 10000}),
		1, 12, rapid.ID[int]).Draw(t, "codes")
	counts := make(map[int]int, len(codes))
	for _, c := range codes {
		counts[c] = rapid.IntRange(1, 3).Draw(t, "n")
	}
	return counts
}

// countsOutcomes are the outcomes that count counts on pair a/m1.
func countsOutcomes(counts map[int]int) []domain.Event {
	var evs []domain.Event
	for code, n := range counts {
		for range n {
			evs = append(evs, outcome(0, "a", "m1", code))
		}
	}
	return numbered(evs...)
}

// A pair's counts are written, in a checkpoint (from the state's map or
// the snapshot's frozen slice) and by CodeCounts.AppendJSON, as
// encoding/json writes the same counts in a map: keyed by code, in the
// order of the keys' strings; Map and the keep filter agree with it; and
// a checkpoint read back writes them again the same.
func TestPropertyCountsAreEncodingJSONs(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		counts := codeSet(t)
		want, _ := json.Marshal(counts)
		byKey := map[string]int{}
		for code, n := range counts {
			byKey[strconv.Itoa(code)] = n
		}
		s := fold(countsOutcomes(counts))
		snapCP, err := (&Checkpoint{snap: s.Snapshot()}).MarshalCheckpoint()
		if err != nil {
			t.Fatal(err)
		}
		stateCP, err := s.MarshalCheckpoint()
		if err != nil {
			t.Fatal(err)
		}
		field := append([]byte(`"counts":`), want...)
		for name, cp := range map[string][]byte{"state": stateCP, "snapshot": snapCP} {
			if bytes.Count(cp, []byte(`"counts":`)) != 1 || !bytes.Contains(cp, field) {
				t.Fatalf("the %s's checkpoint does not hold %s:\n%s", name, field, cp)
			}
		}
		back, err := UnmarshalCheckpoint(stateCP)
		if err != nil {
			t.Fatal(err)
		}
		if again, _ := back.MarshalCheckpoint(); !bytes.Equal(again, stateCP) {
			t.Fatalf("read back, the checkpoint writes\n%s\nnot\n%s", again, stateCP)
		}
		var r PairRead
		s.Snapshot().ReadPair(domain.Key{Credential: "a", Model: "m1"}, t0, &r)
		if got := r.Counts.AppendJSON(nil, nil); !bytes.Equal(got, want) {
			t.Fatalf("AppendJSON %s, encoding/json %s", got, want)
		}
		if got, _ := json.Marshal(r.Counts.Map(nil)); !bytes.Equal(got, want) {
			t.Fatalf("Map %s, want %s", got, want)
		}
		odd := func(code int) bool { return code%2 == 1 }
		kept := map[string]int{}
		for code, n := range counts {
			if odd(code) {
				kept[strconv.Itoa(code)] = n
			}
		}
		wantKept, _ := json.Marshal(kept)
		if got := r.Counts.AppendJSON(nil, odd); !bytes.Equal(got, wantKept) || r.Counts.Any(odd) != (len(kept) > 0) {
			t.Fatalf("odd codes: AppendJSON %s (any %v), encoding/json %s", got, r.Counts.Any(odd), wantKept)
		}
		if m := r.Counts.Map(odd); len(m) != len(kept) || (len(kept) == 0 && m != nil) {
			t.Fatalf("odd codes: Map %v, want %v", m, kept)
		}
	})
}

// countedPool is a state of creds × models pairs, each with failures of
// three codes, a tenth of them banned for good when banned (a permanent
// ban's view holds no time to copy), and the models' windows of failures
// emptied by a success of another credential: what the state holds grows
// with the pairs only.
func countedPool(creds, models int, banned bool) *State {
	var evs []domain.Event
	for c := range creds {
		for m := range models {
			cred, model := fmt.Sprintf("cred-%04d", c), fmt.Sprintf("model-%03d", m)
			evs = append(evs, outcome(0, cred, model, 500), outcome(0, cred, model, 429), outcome(0, cred, model, 1000))
			if banned && (c+m)%10 == 0 {
				evs = append(evs, autoBan(time.Second, fmt.Sprintf("ban/%d/%d", c, m), cred, model, 500, 0))
			}
		}
	}
	for m := range models {
		evs = append(evs, outcome(time.Second, "ok", fmt.Sprintf("model-%03d", m), 200))
	}
	return fold(numbered(evs...))
}

// perPair is how many more allocations a walk makes on the larger of two
// pools (prepared once each) per pair it has more: what it allocates per
// pair, without what it allocates once.
func perPair(banned bool, prepare func(s *State) func()) float64 {
	small, large := prepare(countedPool(5, 40, banned)), prepare(countedPool(5, 400, banned))
	a, b := testing.AllocsPerRun(3, small), testing.AllocsPerRun(3, large)
	return (b - a) / float64(5*400-5*40)
}

// Walks over every pair allocate nothing per pair: reading each pair into
// one PairRead (nothing at all), and writing a checkpoint, the state's or
// a snapshot's, of pairs holding counts (a map per pair, or more,
// otherwise).
func TestPairWalksAllocateNothingPerPair(t *testing.T) {
	readAll := func(s *State) func() {
		snap, now := s.Snapshot(), at(time.Minute)
		keys := snap.Pairs()
		return func() {
			var r PairRead
			for _, k := range keys {
				snap.ReadPair(k, now, &r)
			}
		}
	}
	if n := testing.AllocsPerRun(3, readAll(countedPool(5, 400, true))); n > 1 {
		t.Errorf("ReadPair over 2,000 pairs: %v allocations, want at most 1 (the read)", n)
	}
	for _, c := range []struct {
		name    string
		banned  bool // a ban in a checkpoint costs allocations of its own
		prepare func(s *State) func()
	}{
		{"ReadPair", true, readAll},
		{"state checkpoint", false, func(s *State) func() { return func() { _, _ = s.MarshalCheckpoint() } }},
		{"snapshot checkpoint", false, func(s *State) func() {
			cp := &Checkpoint{snap: s.Snapshot()}
			return func() { _, _ = cp.MarshalCheckpoint() }
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Under the race detector sync.Pool drops items at random, and
			// encoding/json takes a scanner from one for each pair's
			// counts: about half an allocation a pair, still short of the
			// one a map per pair would cost at the least.
			limit := 0.05
			if raceEnabled {
				limit = 0.9
			}
			n := perPair(c.banned, c.prepare)
			t.Logf("%.3f allocations per pair", n)
			if n > limit {
				t.Errorf("%.2f allocations per pair, want none", n)
			}
		})
	}
}
