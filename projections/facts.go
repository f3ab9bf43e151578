package projections

import (
	"iter"
	"slices"
	"time"

	"github.com/airouter/airouter/domain"
)

// Facts is what the state knows about an outcome's pair and model right
// after Apply folded that outcome: the input of domain.Decide. Judged at
// the outcome's time; a cooldown or bench that has ended by then reads as
// none. Facts of any other kind of event are empty.
//
// Counts is a copy; ModelFailures shares the state's memory and must not be
// written to. Counting the model's banned pairs moves the state's cap
// index to the outcome's time (capcount.go), so Facts runs where the state
// is written, as Apply does: the writer goroutine, or a tool's own fold.
func (s *State) Facts(ev domain.Event) domain.Facts {
	if ev.Kind != domain.KindOutcomeRecorded || ev.Outcome == nil {
		return domain.Facts{}
	}
	o := ev.Outcome
	t := nanos(ev.At)
	var f domain.Facts
	if c := s.creds[o.Credential]; c != nil {
		p := c.pairs[o.Model]
		var exact *banRec
		if p != nil {
			exact = p.ban
			if len(p.counts) > 0 {
				f.Counts = make(map[int]int, len(p.counts))
				for code, n := range p.counts {
					f.Counts[code] = n
				}
				f.Streak = p.streak
			}
			if p.cooldown != nil && p.cooldown.until > t {
				f.CooldownUntil = p.cooldown.cd.Until
			}
			if g := p.guards; g != nil {
				f.Withheld, f.WouldBan, f.LadderStep = g.withheld, g.shadow.activeAt(t), g.ladder
			}
		}
		if c.cooldown != nil && c.cooldown.until > t {
			f.CredCooldownUntil = c.cooldown.cd.Until
			if f.CredCooldownUntil.After(f.CooldownUntil) {
				f.CooldownUntil = f.CredCooldownUntil
			}
		}
		if b := longerBan(activeBan(c.wild, t), activeBan(exact, t)); b != nil {
			f.Banned = true
			f.BanPermanent = b.perm
			if !b.perm {
				f.BanUntil = *b.ban.Until
			}
		} else if len(f.Counts) > 0 {
			f.ModelPairs, f.ModelBanned = s.modelBans(o.Model, t)
		}
	}
	if m := s.models[o.Model]; m != nil {
		if n := len(m.window); n > 0 {
			f.ModelFailures = m.window[:n:n]
		}
		if m.bench != nil && m.bench.until > t {
			f.BenchedUntil = m.bench.bench.Until
		}
	}
	return f
}

// activeBan is b when it applies at t, else nil.
func activeBan(b *banRec, t int64) *banRec {
	if b.activeAt(t) {
		return b
	}
	return nil
}

// longerBan is the ban that ends later: a permanent one beats any finite
// one; on a tie, a.
func longerBan(a, b *banRec) *banRec {
	switch {
	case a == nil:
		return b
	case b == nil || a.perm:
		return a
	case b.perm || b.until > a.until:
		return b
	}
	return a
}

// ExpiredBans returns a ban-lifted (by expiry) event for every ban whose
// end is at or before now, ordered by credential then model, so the
// decision engine's expiry sweep can record when each ban ended. Each
// event's id is derived from the ban's id and its time is the ban's end, so
// publishing it twice is de-duplicated.
func (s *State) ExpiredBans(now time.Time) []domain.Event {
	return expiredBans(s.bans(), now)
}

// ExpiredBans is State.ExpiredBans on the snapshot, reading the records
// of the bans its block index says have ended (endedBans).
func (s *Snapshot) ExpiredBans(now time.Time) []domain.Event {
	return expiredBans(s.endedBans(nanos(now)), now)
}

// ExpiredBansOn is ExpiredBans for the bans on keys alone, in the same
// order: a caller that follows the open bans itself (whatif) names the keys
// whose bans it saw end, and pays for those, not for a scan of the pool.
// A key with no ban, or one not ended by now, yields nothing.
func (s *State) ExpiredBansOn(keys []domain.Key, now time.Time) []domain.Event {
	return expiredBans(func(yield func(*banRec) bool) {
		for _, k := range keys {
			c := s.creds[k.Credential]
			if c == nil {
				continue
			}
			b := c.wild
			if !k.Wildcard() {
				b = nil
				if p := c.pairs[k.Model]; p != nil {
					b = p.ban
				}
			}
			if !yield(b) {
				return
			}
		}
	}, now)
}

// expiredBans is ExpiredBans over bans, ban records of a state or a
// snapshot that include every expired one (persistent.go, held.go), in
// any order.
func expiredBans(bans iter.Seq[*banRec], now time.Time) []domain.Event {
	t := nanos(now)
	var out []domain.Event
	add := func(b *banRec) {
		if b == nil || b.perm || b.until > t || b.id == "" {
			return
		}
		out = append(out, domain.Event{
			V:    domain.SchemaVersion,
			Kind: domain.KindBanLifted,
			ID:   ExpiryID(b.id),
			At:   *b.ban.Until,
			Unban: &domain.Unban{
				Credential: b.ban.Credential, Model: b.ban.Model,
				By: domain.LiftedByExpiry, BanID: b.id,
			},
		})
	}
	for b := range bans {
		add(b)
	}
	slices.SortFunc(out, func(x, y domain.Event) int {
		a, b := x.Unban, y.Unban
		return domain.Key{Credential: a.Credential, Model: a.Model}.Compare(domain.Key{Credential: b.Credential, Model: b.Model})
	})
	return out
}

// ExpiryID is the id of the event that records the expiry of ban banID.
func ExpiryID(banID string) string { return "expiry/" + banID }
