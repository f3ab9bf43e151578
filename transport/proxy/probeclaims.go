package proxy

import "time"

// Recovery probes a pick does not meet while scanning. A pick looks at the
// fallback group only when no primary is usable, so a fallback pair under
// an automatic ban would never get its probe while primaries serve, and a
// permanent ban there would never end; and a pick in a large group
// (sample.go) draws a few candidates instead of visiting them all. The
// snapshot counts the probe claims it folded (claimGate); such a pick
// looks through the group for an unsent claim of this process only when
// that count changed since the group was last found without one, so the
// normal path costs one atomic load.

// claimGate is a Gate that counts the probe claims it folded
// (projections.Snapshot.ClaimsFolded).
type claimGate interface {
	ClaimsFolded() uint64
}

// groupProbe returns a candidate of group k whose open claim of this
// process it took, or -1 when there is none or the claims have not
// changed since the group was last found without one. A claim found open
// on a candidate at its rate limit leaves the count unrecorded, so the
// next pick looks again.
func (pl *pool) groupProbe(g Gate, now time.Time, sec int64, skip idxSet, ep endpoint, k int) int {
	from, to := pl.group(k)
	cg, ok := g.(claimGate)
	if !ok || from == to || pl.probes == nil || pl.probes.replica == "" {
		return -1
	}
	n := cg.ClaimsFolded()
	seen := &pl.groups.claims[k]
	if n == 0 || seen.Load() == n {
		return -1
	}
	missed := false
	for i := from; i < to; i++ {
		c := &pl.cands[i]
		if skip.has(i) || c.cred.eps&ep == 0 {
			continue
		}
		b, blocked := g.Blocked(c.cred.name, c.model, now)
		if !blocked || b.Probe == nil || c.probeSeen.Load() == b.Probe {
			continue
		}
		if !pl.probes.open(b.Probe) {
			c.probeSeen.Store(b.Probe)
			continue
		}
		if c.full(sec) {
			missed = true
			continue
		}
		if pl.takeProbe(i, b.Probe) {
			return i
		}
	}
	if !missed {
		seen.Store(n)
	}
	return -1
}
