package projections

import (
	"iter"
	"time"

	"github.com/airouter/airouter/domain"
)

// The questions a /metrics scrape and /health ask of every credential and
// pair, answered from the block index (the pairs holding a ban or a
// cooldown) instead of from a view of every pair: at 100,000 pairs, a
// tenth banned, a scrape read each credential's every pair to learn
// whether one is banned.

// heldOf yields the pairs of c that hold a ban or a cooldown: those the
// block index has entries for, in no particular order (every pair when c
// is not indexed, as Blocked would miss none).
func (s *Snapshot) heldOf(c *frozenCred) iter.Seq[*pairRec] {
	return func(yield func(*pairRec) bool) {
		cb := s.index.cred(c.name)
		if cb == nil {
			for p := range values(c.pairs) {
				if !yield(p) {
					return
				}
			}
			return
		}
		for model := range cb.pairs {
			if p := lookup(c.pairs, model); p != nil && !yield(p) {
				return
			}
		}
	}
}

// CredentialBanned reports whether the credential has an active ban at
// now, its wildcard ban or one of its pairs': whether CredentialBan finds
// one, at the cost of the credential's held pairs.
func (s *Snapshot) CredentialBanned(credential string, now time.Time) bool {
	c := lookup(s.creds, credential)
	if c == nil {
		return false
	}
	t := nanos(now)
	if c.wild.activeAt(t) {
		return true
	}
	for p := range s.heldOf(c) {
		if p.ban.activeAt(t) {
			return true
		}
	}
	return false
}

// ActiveBansByOrigin counts the bans active at now (a wildcard ban is
// one) by origin: the bans Bans lists, without a view of each.
func (s *Snapshot) ActiveBansByOrigin(now time.Time) map[domain.Origin]int {
	t := nanos(now)
	out := map[domain.Origin]int{}
	for c := range values(s.creds) {
		if c.wild.activeAt(t) {
			out[c.wild.ban.Origin]++
		}
		for p := range s.heldOf(c) {
			if p.ban.activeAt(t) {
				out[p.ban.ban.Origin]++
			}
		}
	}
	return out
}

// Holds reports whether the pair is held back at now by a ban of its own
// or by a cooldown (its own or its credential's): what Pair's view says
// with Banned and BanModel the pair's model, or with CooldownUntil set,
// read from the block index without building that view.
func (s *Snapshot) Holds(key domain.Key, now time.Time) bool {
	cb := s.index.cred(key.Credential)
	if cb == nil {
		if c := lookup(s.creds, key.Credential); c != nil {
			// Not indexed: the records themselves.
			t := nanos(now)
			p := lookup(c.pairs, key.Model)
			return (c.cooldown != nil && c.cooldown.until > t) ||
				(p != nil && (p.ban.activeAt(t) || (p.cooldown != nil && p.cooldown.until > t)))
		}
		return false
	}
	t := nanos(now)
	if cb.cooldown > t {
		return true
	}
	pb, ok := cb.pairs[key.Model]
	return ok && (pb.banPerm || pb.ban > t || pb.cooldown > t)
}
