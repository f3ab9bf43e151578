package projections

import (
	"iter"
	"maps"
	"math"
	"time"

	"github.com/airouter/airouter/domain"
)

// blockIndex is what Blocked reads: per credential, its wildcard ban and,
// for every pair holding a ban or a cooldown, the ends of the pair's ban and
// cooldown, inline, and the benched models' ends beside them, so that a
// question costs a hash of the credential's name and two map lookups (three
// while a model has a bench record), and no pointer chasing.
// Ends are Unix nanoseconds; 0 is none, and a permanent ban ends at
// math.MaxInt64 with perm set.
//
// The index changes only when a ban, cooldown or bench appears or changes,
// not with counters or with pairs that hold neither, so most snapshots
// share their predecessor's, and a change redoes the entries it touches: a
// bench copies the map of benches alone, as no credential's entry holds it.
//
// The credentials' entries are split into credShards maps by a hash of the
// name (shardOf), behind one pointer: a change copies the array of maps and
// the maps of the credentials it touches, about 1/credShards of the pool
// each, and shares every other map with the previous index. creds is nil
// in the zero index, which has no entries.
type blockIndex struct {
	creds *[credShards]map[string]*credBlocks
	// bench holds the end of every model's bench record; a swap that
	// changes one copies this map, shared otherwise.
	bench map[string]int64
}

// credShards is how many maps the credentials' entries are split into: a
// change of one credential copies 1/credShards of them, and the array of
// maps itself (credShards pointers).
const credShards = 64

// shardOf is the shard of the credential named: FNV-1a of the name, which
// allocates nothing and is the same in every index, so a full rebuild and
// an incremental one place each credential alike.
func shardOf(name string) int {
	return int(fnvString(fnvOffset, name) % credShards)
}

// fnvOffset starts an FNV-1a hash; fnvString continues hash h over s.
const fnvOffset uint32 = 2166136261

func fnvString(h uint32, s string) uint32 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

// cred is the entry of the credential named, nil when it has none.
func (ix *blockIndex) cred(name string) *credBlocks {
	if ix.creds == nil {
		return nil
	}
	return ix.creds[shardOf(name)][name]
}

// allCreds yields every credential's entry, in no particular order.
func (ix *blockIndex) allCreds() iter.Seq2[string, *credBlocks] {
	return func(yield func(string, *credBlocks) bool) {
		if ix.creds == nil {
			return
		}
		for _, shard := range ix.creds {
			for name, cb := range shard {
				if !yield(name, cb) {
					return
				}
			}
		}
	}
}

type credBlocks struct {
	wild       int64
	wildPerm   bool
	wildManual bool
	// cooldown is the end of the credential's cooldown of every model.
	cooldown int64
	// probe is the open recovery probe claim of its auth cooldown.
	probe *domain.ProbeClaim
	pairs map[string]pairBlocks
}

type pairBlocks struct {
	ban       int64
	banPerm   bool
	banManual bool
	cooldown  int64
	// probe is the open recovery probe claim of the pair's automatic ban.
	probe *domain.ProbeClaim
}

// banEnd is the index form of a ban's end.
func banEnd(b *banRec) (int64, bool) {
	switch {
	case b == nil:
		return 0, false
	case b.perm:
		return math.MaxInt64, true
	}
	return b.until, false
}

// Blocked answers whether routing must skip the pair at now, and until
// when. A ban (on the pair or on the whole credential; the longer applies,
// a permanent one longest), a cooldown (of the pair or of every model of
// the credential; the longer applies) and a bench may apply together; the
// block returned is the one that ends last, so its Until is when the pair is
// usable again (on a tie: banned, then cooling down, then benched). Manual
// says an admin ban is among the holds; Probe is the open recovery probe
// claim of the pair's automatic ban when nothing else holds the pair (no
// cooldown, bench or credential-wide ban), or of the credential's auth
// cooldown when only that holds it. It does not allocate.
func (s *Snapshot) Blocked(credential, model string, now time.Time) (domain.Block, bool) {
	var pb pairBlocks
	t := nanos(now)
	var manual bool
	// credProbe is the auth cooldown's claim, while only that cooldown
	// holds the pair.
	var credProbe *domain.ProbeClaim
	var bench int64
	if len(s.index.bench) > 0 {
		bench = s.index.bench[model]
	}
	if cb := s.index.cred(credential); cb != nil {
		pb = cb.pairs[model]
		manual = pb.banManual && (pb.banPerm || pb.ban > t)
		wildOn := cb.wildPerm || cb.wild > t
		if wildOn {
			manual = manual || cb.wildManual
			pb.probe = nil
		}
		if cb.probe != nil && !wildOn && !pb.banPerm && pb.ban <= t && pb.cooldown <= t && bench <= t {
			credProbe = cb.probe
		}
		if cb.wildPerm || cb.wild > pb.ban {
			pb.ban, pb.banPerm = cb.wild, cb.wildPerm
		}
		pb.cooldown = max(pb.cooldown, cb.cooldown)
	}
	if pb.probe != nil && (pb.cooldown > t || bench > t) {
		pb.probe = nil // a Retry-After or a bench is kept: no probe then
	}
	if pb.banPerm {
		return domain.Block{Reason: domain.BlockBanned, Permanent: true, Manual: manual, Probe: pb.probe}, true
	}
	var reason domain.BlockReason
	var until int64
	if pb.cooldown > t {
		reason, until = domain.BlockCoolingDown, pb.cooldown
	}
	if pb.ban > t && pb.ban >= until {
		reason, until = domain.BlockBanned, pb.ban
	}
	if bench > t && bench > until {
		reason, until = domain.BlockBenched, bench
	}
	if reason == "" {
		return domain.Block{}, false
	}
	b := domain.Block{Reason: reason, Until: fromNanos(until), Manual: manual}
	switch reason {
	case domain.BlockBanned:
		b.Probe = pb.probe
	case domain.BlockCoolingDown:
		b.Probe = credProbe
	}
	return b, true
}

// indexAll builds the whole index from the snapshot's records.
func (s *Snapshot) indexAll() {
	creds := new([credShards]map[string]*credBlocks)
	for i := range creds {
		creds[i] = make(map[string]*credBlocks, size(s.creds)/credShards)
	}
	s.index = blockIndex{creds: creds, bench: map[string]int64{}}
	for m := range values(s.models) {
		if m.bench != nil {
			s.index.bench[m.name] = m.bench.until
		}
	}
	for c := range values(s.creds) {
		creds[shardOf(c.name)][c.name] = s.credBlocks(c)
	}
	s.indexProbes()
}

// reindexCred is what changed in one credential's index entries: all of
// them (full: the credential is new, or its wildcard ban, cooldown or probe
// changed), or those of the models named.
type reindexCred struct {
	full   bool
	models map[string]bool
}

// reindex rebuilds the index entries that changed, sharing the rest with
// the previous index: a credential's whole entry when full, else a copy of
// its entry with the named pairs' entries redone, in a copy of its shard;
// the shards of credentials not named are shared. A credential's entry
// holds only its pairs with something to index (pairEntry), so redoing one
// pair costs the credential's banned and cooling pairs, not all it has.
func (s *Snapshot) reindex(changes map[string]*reindexCred) {
	if len(changes) == 0 {
		return
	}
	creds := new([credShards]map[string]*credBlocks)
	if s.index.creds != nil {
		*creds = *s.index.creds
	}
	var copied [credShards]bool
	for name, ch := range changes {
		i := shardOf(name)
		if !copied[i] {
			creds[i], copied[i] = maps.Clone(creds[i]), true
			if creds[i] == nil {
				creds[i] = map[string]*credBlocks{}
			}
		}
		c, prev := lookup(s.creds, name), creds[i][name]
		if ch.full || prev == nil {
			creds[i][name] = s.credBlocks(c)
			continue
		}
		cb := *prev
		cb.pairs = maps.Clone(prev.pairs)
		for model := range ch.models {
			if pb, ok := pairEntry(lookup(c.pairs, model)); ok {
				cb.pairs[model] = pb
			} else {
				delete(cb.pairs, model)
			}
		}
		creds[i][name] = &cb
	}
	s.index.creds = creds
}

// pairEntry is the index entry of pair p, and false when p has nothing to
// index (no ban, no cooldown): Blocked then answers from the credential
// and the model's bench, as the entry would.
func pairEntry(p *pairRec) (pairBlocks, bool) {
	if p == nil || (p.ban == nil && p.cooldown == nil) {
		return pairBlocks{}, false
	}
	var pb pairBlocks
	pb.ban, pb.banPerm = banEnd(p.ban)
	pb.banManual = p.ban != nil && !probed(p.ban)
	if r := openProbe(p); r != nil {
		pb.probe = &r.claim
	}
	if p.cooldown != nil {
		pb.cooldown = p.cooldown.until
	}
	return pb, true
}

func (s *Snapshot) credBlocks(c *frozenCred) *credBlocks {
	cb := &credBlocks{pairs: map[string]pairBlocks{}}
	cb.wild, cb.wildPerm = banEnd(c.wild)
	if c.cooldown != nil {
		cb.cooldown = c.cooldown.until
	}
	cb.wildManual = c.wild != nil && !probed(c.wild)
	if r := openCredProbe(&c.credRec); r != nil {
		cb.probe = &r.claim
	}
	for p := range values(c.pairs) {
		if pb, ok := pairEntry(p); ok {
			cb.pairs[p.model] = pb
		}
	}
	return cb
}
