package projections

import (
	"math"
	"strings"
	"time"

	"github.com/airouter/airouter/domain"
)

// probeIndex orders the snapshot's probed holds (every automatic pair ban,
// every auth cooldown of a credential) by the earliest time their next
// probe can be due, so the prober's tick (DueProbes, every second) reads
// the holds due and stops at the first that is not: a tick finding
// nothing due reads a few tree paths, not the credentials and held pairs.
//
// The due time of a hold depends on the recovery policy the caller passes
// (its base plus Gap of its interval), so the index keys each hold by what
// does not: its base (the hold's start, or its open claim's time), in one
// tree per interval (intervals 64 and later share tree 64, their gaps
// being equal under any policy). A hold that something else holds back
// past its base (the pair's cooldown, its credential's wildcard ban, its
// model's bench) is keyed instead by the latest of those ends, in tree
// probeClasses, as its probe cannot be due before then; once that end has
// passed, a tick reads it until its gap has passed too and it is claimed
// (a claim keys it by the claim's time again). Each key is a lower bound
// of when duePairProbe or dueCredProbe can answer yes, and those rules
// decide. A hold past its end (a ban the sweep has yet to lift, an auth
// cooldown run out) has no probe due; the trees skip such entries
// (probeTree's lastEnd), so they cost a tick next to nothing.
//
// byModel lists the credentials with a probed ban per model, so a bench
// re-keys its model's probed bans and no other entry. The index is
// rebuilt with the block index (indexAll) and updated per swap from the
// records the swap changed (reindexProbes).
type probeIndex struct {
	due     *[probeClasses + 1]*probeTree[probeKey]
	byModel *probeTree[modelCred]
}

// probeClasses is the number of interval trees; probeClasses itself
// names the tree of holds keyed by what holds them back. Gap is constant
// from interval 64 on under any policy (the doubling saturates or wraps
// to 0 within 64 steps).
const probeClasses = 65

// probeKey is an entry: the lower bound at (Unix nanoseconds) and the
// pair (model "" for a credential's auth cooldown), ordered by both, with
// the end of the hold (math.MaxInt64 for a permanent ban): a hold that
// has ended has no probe due, so a walk skips it.
type probeKey struct {
	at          int64
	cred, model string
	ends        int64
}

func (k probeKey) end() int64 { return k.ends }

func (k probeKey) compare(o probeKey) int {
	switch {
	case k.at != o.at:
		if k.at < o.at {
			return -1
		}
		return 1
	case k.cred != o.cred:
		return strings.Compare(k.cred, o.cred)
	}
	return strings.Compare(k.model, o.model)
}

func (k probeKey) hash() uint32 {
	h := fnv(fnv(fnvOffset, k.cred), k.model)
	for i := range 8 {
		h = (h ^ uint32(byte(k.at>>(8*i)))) * 16777619
	}
	return h
}

// fnv continues FNV-1a hash h over s and a terminator, so ("ab","c")
// and ("a","bc") differ.
func fnv(h uint32, s string) uint32 {
	return (fnvString(h, s) ^ 0xff) * 16777619
}

// modelCred names a pair with a probed ban by its model first.
type modelCred struct{ model, cred string }

func (k modelCred) compare(o modelCred) int {
	if k.model != o.model {
		return strings.Compare(k.model, o.model)
	}
	return strings.Compare(k.cred, o.cred)
}

func (k modelCred) hash() uint32 { return fnv(fnv(fnvOffset, k.model), k.cred) }

func (modelCred) end() int64 { return math.MaxInt64 }

// probeEntry is where a probed hold sits in the index.
type probeEntry struct {
	class int
	key   probeKey
}

// pairProbeEntry is the entry of pair p of credential c, whose model is m
// (nil when it has no record), and false when p has no automatic ban.
func pairProbeEntry(c *frozenCred, p *pairRec, m *modelRec) (probeEntry, bool) {
	if c == nil || p == nil || !probed(p.ban) {
		return probeEntry{}, false
	}
	r := openProbe(p)
	base := p.ban.ban.Since
	if r != nil {
		base = r.at
	}
	hold := wildEnd(c)
	if p.cooldown != nil {
		hold = max(hold, p.cooldown.until)
	}
	if m != nil && m.bench != nil {
		hold = max(hold, m.bench.until)
	}
	end, _ := banEnd(p.ban)
	return entryOf(probeKey{cred: c.name, model: p.model, ends: end}, nanos(base), hold, claimInterval(r)), true
}

// credProbeEntry is the entry of c's auth cooldown, false when it has none.
func credProbeEntry(c *frozenCred) (probeEntry, bool) {
	if c == nil || c.cooldown == nil || !c.cooldown.cd.Auth() || c.cooldown.cd.Since.IsZero() {
		return probeEntry{}, false
	}
	r := openCredProbe(&c.credRec)
	base := c.cooldown.cd.Since
	if r != nil {
		base = r.at
	}
	return entryOf(probeKey{cred: c.name, ends: c.cooldown.until}, nanos(base), wildEnd(c), claimInterval(r)), true
}

// wildEnd is when the credential's wildcard ban stops holding its probes.
func wildEnd(c *frozenCred) int64 {
	end, _ := banEnd(c.wild)
	return end
}

func entryOf(k probeKey, base, hold int64, interval int) probeEntry {
	if hold > base {
		k.at = hold
		return probeEntry{class: probeClasses, key: k}
	}
	k.at = base
	return probeEntry{class: min(interval, probeClasses-1), key: k}
}

// dueCandidates yields the entries whose lower bound has passed at t under
// pol and whose hold has not ended, in no particular order: every hold due
// at t is among them.
func (ix *probeIndex) dueCandidates(t int64, pol domain.RecoveryPolicy, yield func(probeKey)) {
	if ix.due == nil {
		return
	}
	for class, tree := range ix.due {
		if tree == nil {
			continue
		}
		bound := t
		if class < probeClasses {
			bound = subSat(t, pol.Gap(class))
		}
		tree.ascendFrom(probeKey{at: math.MinInt64}, t, func(k probeKey) bool {
			if k.at > bound {
				return false
			}
			yield(k)
			return true
		})
	}
}

// subSat is t-d, saturated to the int64 range.
func subSat(t int64, d time.Duration) int64 {
	switch r := t - int64(d); {
	case d > 0 && r > t:
		return math.MinInt64
	case d < 0 && r < t:
		return math.MaxInt64
	default:
		return r
	}
}

// probeEdit collects one swap's changes to a probe index; it copies the
// array of trees once.
type probeEdit struct {
	ix     probeIndex
	copied bool
}

// set replaces the entry old (when had) of a hold with cur (when has).
func (e *probeEdit) set(old, cur probeEntry, had, has bool) {
	if had == has && (!had || old == cur) {
		return
	}
	if !e.copied {
		due := new([probeClasses + 1]*probeTree[probeKey])
		if e.ix.due != nil {
			*due = *e.ix.due
		}
		e.ix.due, e.copied = due, true
	}
	if had {
		e.ix.due[old.class] = e.ix.due[old.class].remove(old.key)
		if old.key.model != "" && !has {
			e.ix.byModel = e.ix.byModel.remove(modelCred{old.key.model, old.key.cred})
		}
	}
	if has {
		e.ix.due[cur.class] = e.ix.due[cur.class].insert(cur.key)
		if cur.key.model != "" && !had {
			e.ix.byModel = e.ix.byModel.insert(modelCred{cur.key.model, cur.key.cred})
		}
	}
}
