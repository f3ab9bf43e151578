package proxy

import "time"

// Recovery probes of the fallback group. A pick looks at the fallback
// group only when no primary is usable, so a fallback pair under an
// automatic ban would never get its probe while primaries serve, and a
// permanent ban there would never end. The snapshot counts the probe
// claims it folded (claimGate); a pick whose primary won looks through the
// fallback group for an unsent claim of this process only when that count
// changed since the group was last found without one, so the normal path
// costs one atomic load.

// claimGate is a Gate that counts the probe claims it folded
// (projections.Snapshot.ClaimsFolded).
type claimGate interface {
	ClaimsFolded() uint64
}

// fallbackProbe returns a fallback candidate whose open claim of this
// process it took, or -1 when there is none or the claims have not changed
// since the group was last found without one.
func (pl *pool) fallbackProbe(g Gate, now time.Time, sec int64, skip idxSet, ep endpoint) int {
	cg, ok := g.(claimGate)
	if !ok || pl.primary == len(pl.cands) || pl.probes == nil || pl.probes.replica == "" {
		return -1
	}
	n := cg.ClaimsFolded()
	if n == 0 || pl.fallbackClaims.Load() == n {
		return -1
	}
	for i := pl.primary; i < len(pl.cands); i++ {
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
			continue
		}
		taken := pl.probes.take(b.Probe)
		c.probeSeen.Store(b.Probe)
		if taken {
			return i
		}
	}
	pl.fallbackClaims.Store(n)
	return -1
}
