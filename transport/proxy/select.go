package proxy

import (
	"time"

	"github.com/airouter/airouter/domain"
)

// idxSet marks candidates of one pool by index.
type idxSet []uint64

func newIdxSet(n int) idxSet    { return make(idxSet, (n+63)/64) }
func (s idxSet) has(i int) bool { return s[i>>6]&(1<<(uint(i)&63)) != 0 }
func (s idxSet) set(i int)      { s[i>>6] |= 1 << (uint(i) & 63) }
func (s idxSet) count() (n int) {
	for _, w := range s {
		for ; w != 0; w &= w - 1 {
			n++
		}
	}
	return n
}

// pick chooses the next candidate for a request on surface ep, skipping
// those in skip, those the gate blocks and those over a rate limit. In a
// group of fewer than sampleMin candidates it picks by smooth weighted
// round-robin (nginx): every live candidate's counter grows by its weight,
// the highest counter wins (ties go to config order) and the winner's
// counter drops by the total. A larger group is picked from by weighted
// random sampling (sample.go). Fallback candidates are considered only
// when no primary is live. The winner is charged one request in its
// windows; a candidate that loses that race joins skip and the pick runs
// again.
//
// The counters are atomics owned by the pool: concurrent picks on one model
// may interleave, which can make two of them agree on a winner, but every
// pick adds each live weight once and takes the total off once, so the
// long-run shares stay exact. Nothing here locks or allocates.
func (pl *pool) pick(g Gate, now time.Time, skip idxSet, ep endpoint, rej *rejections) int {
	i, _ := pl.pickProbe(g, now, skip, ep, rej)
	return i
}

// pickProbe is pick that also reports whether the winner is a recovery
// probe: a pair whose automatic ban has an open claim of this process
// (recovery.go) goes first, once per claim, in the fallback group too
// while a primary serves (probeclaims.go).
func (pl *pool) pickProbe(g Gate, now time.Time, skip idxSet, ep endpoint, rej *rejections) (int, bool) {
	sec := now.Unix()
	for {
		i, probe := pl.pickIn(g, now, sec, skip, ep, 0, rej)
		if i < 0 {
			i, probe = pl.pickIn(g, now, sec, skip, ep, 1, rej)
		} else if !probe {
			if j := pl.groupProbe(g, now, sec, skip, ep, 1); j >= 0 {
				i, probe = j, true
			}
		}
		if i < 0 {
			return -1, false
		}
		c := &pl.cands[i]
		if c.reserve(sec) {
			return i, probe
		}
		rej.count(rejectRateLimited)
		skip.set(i)
	}
}

func (pl *pool) pickGroup(g Gate, now time.Time, sec int64, skip idxSet, ep endpoint, from, to int, rej *rejections) (int, bool) {
	best, bestCur, total := -1, int64(0), int64(0)
	probe, claim := -1, (*domain.ProbeClaim)(nil)
	for i := from; i < to; i++ {
		c := &pl.cands[i]
		if skip.has(i) {
			continue
		}
		ok, pc := c.usable(g, now, sec, ep, rej, pl.probes)
		if pc != nil && probe < 0 {
			probe, claim = i, pc
		}
		if !ok {
			continue
		}
		cur := c.current.Add(c.weight)
		total += c.weight
		if best < 0 || cur > bestCur {
			best, bestCur = i, cur
		}
	}
	if best >= 0 {
		// Taken off the round's winner even when a probe goes instead, so
		// the counters keep summing to zero.
		pl.cands[best].current.Add(-total)
	}
	if probe >= 0 && pl.takeProbe(probe, claim) {
		return probe, true
	}
	return best, false
}

// takeProbe takes candidate i's open claim, reporting false when another
// request took it first. Either way the claim is spent for the candidate:
// later picks skip the probes' lock.
func (pl *pool) takeProbe(i int, claim *domain.ProbeClaim) bool {
	taken := pl.probes.take(claim)
	pl.cands[i].probeSeen.Store(claim)
	return taken
}

// usable reports whether the candidate serves ep and is neither blocked by
// the gate nor over a rate limit at this moment. A candidate blocked only
// by an automatic ban that this process holds an unsent probe claim for
// is not usable, but its claim is returned.
func (c *candidate) usable(g Gate, now time.Time, sec int64, ep endpoint, rej *rejections, pr *probes) (bool, *domain.ProbeClaim) {
	if c.cred.eps&ep == 0 {
		return false, nil
	}
	if g != nil {
		if b, blocked := g.Blocked(c.cred.name, c.model, now); blocked {
			rej.countBlock(b.Reason)
			if b.Probe != nil && c.probeSeen.Load() != b.Probe {
				switch {
				case !pr.open(b.Probe):
					// Spent, or another replica's: later picks skip the
					// lock (a credential's claim reaches all its pairs).
					c.probeSeen.Store(b.Probe)
				case !c.full(sec):
					return false, b.Probe
				}
			}
			return false, nil
		}
	}
	if c.full(sec) {
		rej.count(rejectRateLimited)
		return false, nil
	}
	return true, nil
}

// full reports whether the credential or the pair is at a rate limit.
func (c *candidate) full(sec int64) bool { return c.cred.limits.full(sec) || c.pair.full(sec) }

// reserve counts one request on the credential and the pair, or nothing
// when either is at its rpm limit.
func (c *candidate) reserve(sec int64) bool {
	if !c.cred.limits.reserve(sec) {
		return false
	}
	if !c.pair.reserve(sec) {
		c.cred.limits.release(sec)
		return false
	}
	return true
}

// charge counts a response's tokens on the credential and the pair.
func (c *candidate) charge(sec int64, tokens int64) {
	c.cred.limits.charge(sec, tokens)
	c.pair.charge(sec, tokens)
}
