package projections

import (
	"iter"
	"time"
)

// heldPairs yields every credential of the snapshot, in key order, with
// each of its pairs that holds a ban or a cooldown (nil once, first, for
// the credential itself): the pairs the block index has entries for, in
// no particular order. The prober reads it on a snapshot without a probe
// index (scanDueProbes); the pairs with neither have no probe, so this
// costs the credentials and the pairs held back, not every pair of the
// pool.
func (s *Snapshot) heldPairs() iter.Seq2[*frozenCred, *pairRec] {
	return func(yield func(*frozenCred, *pairRec) bool) {
		for c := range values(s.creds) {
			if !yield(c, nil) {
				return
			}
			for p := range s.heldOf(c) {
				if !yield(c, p) {
					return
				}
			}
		}
	}
}

// endedBans yields the ban records of the snapshot that ended by t (Unix
// nanoseconds): each credential's wildcard ban and its held pairs' bans
// whose block index entry ends by then, so that a sweep finding nothing
// expired reads the index alone and costs the pairs held back, not the
// pool (BenchmarkBackgroundBursts).
func (s *Snapshot) endedBans(t int64) iter.Seq[*banRec] {
	ended := func(end int64, perm bool) bool { return end != 0 && !perm && end <= t }
	return func(yield func(*banRec) bool) {
		for c := range values(s.creds) {
			cb := s.index.cred(c.name)
			if cb == nil || ended(cb.wild, cb.wildPerm) {
				if !yield(c.wild) {
					return
				}
			}
			if cb == nil { // not indexed: every pair, as Blocked would miss none
				for p := range values(c.pairs) {
					if !yield(p.ban) {
						return
					}
				}
				continue
			}
			for model, pb := range cb.pairs {
				if !ended(pb.ban, pb.banPerm) {
					continue
				}
				if p := lookup(c.pairs, model); p != nil && !yield(p.ban) {
					return
				}
			}
		}
	}
}

// CoolingPairs is how many pairs the log has named that a cooldown holds
// back at now, the pair's own or its credential's: the count of
// Snapshot.Pairs whose Pair(k, now).CooldownUntil is set, read from the
// block index rather than from a view of every pair.
func (s *Snapshot) CoolingPairs(now time.Time) int {
	t := nanos(now)
	n := 0
	for c := range values(s.creds) {
		cb := s.index.cred(c.name)
		switch {
		case c.cooldown != nil && c.cooldown.until > t:
			n += size(c.pairs)
		case cb == nil: // not indexed: every pair
			for p := range values(c.pairs) {
				if p.cooldown != nil && p.cooldown.until > t {
					n++
				}
			}
		default:
			for _, pb := range cb.pairs {
				if pb.cooldown > t {
					n++
				}
			}
		}
	}
	return n
}
