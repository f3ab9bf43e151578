package proxy

import (
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// Selection in a large group. Smooth weighted round-robin visits every
// candidate of a group on every pick, so its cost grows with the group. A
// group of at least sampleMin candidates is picked from by weighted random
// sampling instead: a draw from an alias table built with the pool
// (read-only afterwards) names a candidate in proportion to its weight,
// and the first drawn candidate that is usable wins. After maxDraws
// unusable draws the pick scans the whole group by round-robin, so a group
// with nothing usable is still found empty exactly (and the pick goes on
// to the fallback group, or reports exhaustion). Among the usable
// candidates the shares stay proportional to the weights: a draw that
// names an unusable candidate is thrown away, which leaves the others'
// odds in proportion.

// sampleMin is the smallest group picked from by sampling. The draws cost
// less than round-robin's visits already at two candidates
// (BenchmarkSelectGroupSize), so the bound is where round-robin's exact
// interleaving stops being worth its cost: a pick in a smaller group
// visits at most 15 candidates, and the pools of a few keys most models
// have keep their exact order.
const sampleMin = 16

// maxDraws bounds the draws before a pick falls back to a scan of the
// group: with half the group unusable one pick in 65,536 scans, with nine
// tenths one in five.
const maxDraws = 16

// aliasSlot is one slot of an alias table: a draw landing on the slot
// keeps its own candidate when the draw's low 32 bits are below keep,
// else takes alias (relative to the group's first candidate).
type aliasSlot struct {
	keep  uint32
	alias int32
}

// sampler draws the candidates of one group in proportion to their
// weights in O(1) (Vose's alias method).
type sampler struct {
	from  int
	slots []aliasSlot
}

// newSampler builds the alias table of cands[from:to].
func newSampler(cands []candidate, from, to int) *sampler {
	n := to - from
	s := &sampler{from: from, slots: make([]aliasSlot, n)}
	var total float64
	for i := from; i < to; i++ {
		total += float64(cands[i].weight)
	}
	// scaled[j] is slot j's share times n: 1 is an even share.
	scaled := make([]float64, n)
	var small, large []int32
	for j := range n {
		scaled[j] = float64(cands[from+j].weight) * float64(n) / total
		s.slots[j] = aliasSlot{keep: ^uint32(0), alias: int32(j)}
		if scaled[j] < 1 {
			small = append(small, int32(j))
		} else {
			large = append(large, int32(j))
		}
	}
	for len(small) > 0 && len(large) > 0 {
		lo, hi := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		s.slots[lo] = aliasSlot{keep: uint32(scaled[lo] * (1 << 32)), alias: hi}
		// hi gives up what fills lo's slot.
		if scaled[hi] -= 1 - scaled[lo]; scaled[hi] < 1 {
			large = large[:len(large)-1]
			small = append(small, hi)
		}
	}
	// What is left holds an even share, up to rounding: it keeps its slot.
	return s
}

// draw names a candidate (its index in the pool). r is a seeded source
// for tests; nil draws from the runtime's per-thread generator, which
// takes no lock.
func (s *sampler) draw(r *rand.Rand) int {
	var x uint64
	if r != nil {
		x = r.Uint64()
	} else {
		x = rand.Uint64()
	}
	// The high 32 bits choose the slot (multiply and shift: a bias of at
	// most n/2^32), the low 32 bits whether it keeps its candidate.
	slot := (x >> 32) * uint64(len(s.slots)) >> 32
	sl := s.slots[slot]
	if uint32(x) < sl.keep {
		return s.from + int(slot)
	}
	return s.from + int(sl.alias)
}

// groups is what selection keeps per group of a pool (0 the primaries, 1
// the fallbacks): the sampler of a large group, and the gate's probe claim
// count when the group was last found without an unsent claim
// (probeclaims.go).
type groups struct {
	samplers [2]*sampler
	claims   [2]atomic.Uint64
	// rng, when set, is the samplers' source (a seeded one in tests; a
	// *rand.Rand is not safe for concurrent picks unless its source is).
	rng *rand.Rand
}

// buildGroups gives the pool's large groups their samplers.
func (pl *pool) buildGroups() {
	for k := range pl.groups.samplers {
		if from, to := pl.group(k); to-from >= sampleMin {
			pl.groups.samplers[k] = newSampler(pl.cands, from, to)
		}
	}
}

// group returns the bounds of group k in cands.
func (pl *pool) group(k int) (from, to int) {
	if k == 0 {
		return 0, pl.primary
	}
	return pl.primary, len(pl.cands)
}

// pickIn picks a candidate of group k: by round-robin in a small group;
// in a large one, a recovery probe whose claim is new first, then the
// first usable of up to maxDraws draws, then a round-robin scan.
func (pl *pool) pickIn(g Gate, now time.Time, sec int64, skip idxSet, ep endpoint, k int, rej *rejections) (int, bool) {
	from, to := pl.group(k)
	s := pl.groups.samplers[k]
	if s == nil {
		return pl.pickGroup(g, now, sec, skip, ep, from, to, rej)
	}
	if i := pl.groupProbe(g, now, sec, skip, ep, k); i >= 0 {
		return i, true
	}
	for range maxDraws {
		i := s.draw(pl.groups.rng)
		if skip.has(i) {
			continue
		}
		ok, claim := pl.cands[i].usable(g, now, sec, ep, rej, pl.probes)
		if claim != nil && pl.takeProbe(i, claim) {
			return i, true
		}
		if ok {
			return i, false
		}
	}
	return pl.pickGroup(g, now, sec, skip, ep, from, to, rej)
}
