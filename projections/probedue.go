package projections

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/airouter/airouter/domain"
)

// dueProbes is DueProbes, with the number of probed holds it read: the
// entries of the probe index whose lower bound has passed, each judged by
// the rules themselves (duePairProbe, dueCredProbe). A snapshot built
// without an index (State.Pair's) reads every credential and held pair.
func (s *Snapshot) dueProbes(now time.Time, pol domain.RecoveryPolicy, replica string) ([]domain.Event, int) {
	if !pol.On() {
		return nil, 0
	}
	if s.probes.due == nil {
		return s.scanDueProbes(now, pol, replica)
	}
	var out []domain.Event
	read := 0
	s.probes.dueCandidates(nanos(now), pol, func(k probeKey) {
		read++
		c := lookup(s.creds, k.cred)
		if c == nil { // the index names only the snapshot's credentials
			return
		}
		var p *pairRec
		if k.model != "" {
			p = lookup(c.pairs, k.model)
		}
		if ev, ok := s.dueHold(c, p, k.model != "", now, pol, replica); ok {
			out = append(out, ev)
		}
	})
	sortProbes(out)
	return out, read
}

// dueHold is the probe claim due on a hold: the pair's ban when pair (a
// pair the snapshot does not hold, p nil, has none), else the
// credential's auth cooldown.
func (s *Snapshot) dueHold(c *frozenCred, p *pairRec, pair bool, now time.Time, pol domain.RecoveryPolicy, replica string) (domain.Event, bool) {
	switch {
	case !pair:
		return dueCredProbe(&c.credRec, now, pol, replica)
	case p == nil:
		return domain.Event{}, false
	}
	return duePairProbe(&c.credRec, p, lookup(s.models, p.model), now, pol, replica)
}

// scanDueProbes is DueProbes read from every credential and its held
// pairs, and how many holds it read.
func (s *Snapshot) scanDueProbes(now time.Time, pol domain.RecoveryPolicy, replica string) ([]domain.Event, int) {
	var out []domain.Event
	read := 0
	for c, p := range s.heldPairs() { // a pair with no ban has no probe
		read++
		if ev, ok := s.dueHold(c, p, p != nil, now, pol, replica); ok {
			out = append(out, ev)
		}
	}
	sortProbes(out)
	return out, read
}

// sortProbes orders claims by credential then model.
func sortProbes(evs []domain.Event) {
	slices.SortFunc(evs, func(x, y domain.Event) int { return x.Probe.Key().Compare(y.Probe.Key()) })
}

// indexProbes builds the probe index from the snapshot's records and its
// block index (the held pairs).
func (s *Snapshot) indexProbes() {
	held := 0 // the entries at most: each credential and its held pairs
	for _, cb := range s.index.allCreds() {
		held += 1 + len(cb.pairs)
	}
	entries := make([]probeEntry, 0, held)
	byModel := make([]modelCred, 0, held)
	for c := range values(s.creds) {
		if e, ok := credProbeEntry(c); ok {
			entries = append(entries, e)
		}
		for p := range s.heldOf(c) {
			if e, ok := pairProbeEntry(c, p, lookup(s.models, p.model)); ok {
				entries = append(entries, e)
				byModel = append(byModel, modelCred{p.model, c.name})
			}
		}
	}
	slices.SortFunc(entries, func(x, y probeEntry) int { return cmp.Or(cmp.Compare(x.class, y.class), x.key.compare(y.key)) })
	due := new([probeClasses + 1]*probeTree[probeKey])
	for i := 0; i < len(entries); {
		j := i + 1
		for j < len(entries) && entries[j].class == entries[i].class {
			j++
		}
		class := entries[i:j]
		due[entries[i].class] = buildTree(len(class), func(k int) probeKey { return class[k].key })
		i = j
	}
	slices.SortFunc(byModel, modelCred.compare)
	s.probes = probeIndex{due: due, byModel: buildTree(len(byModel), func(i int) modelCred { return byModel[i] })}
}

// reindexAfter brings the indexes prev shared with s up to s's records:
// the block index entries of the credentials changed (reindex), the
// benches of models (those whose records the swap changed when a bench
// did, else none) and the probe entries of both. A bench costs the map of
// benches and its model's probed bans, not every credential's entries.
func (s *Snapshot) reindexAfter(prev *Snapshot, changes map[string]*reindexCred, models []*modelRec) {
	s.reindex(changes)
	benched := s.reindexBenches(prev, models)
	if len(changes) == 0 && len(benched) == 0 {
		return
	}
	if prev.probes.due == nil {
		s.indexProbes()
		return
	}
	s.reindexProbes(prev, changes, benched)
}

// reindexBenches updates the map of benches for the models whose bench
// record differs from prev's, copying it once, and returns their names.
func (s *Snapshot) reindexBenches(prev *Snapshot, models []*modelRec) []string {
	var changed []string
	for _, m := range models {
		var was, is *benchRec
		if old := lookup(prev.models, m.name); old != nil {
			was = old.bench
		}
		if cur := lookup(s.models, m.name); cur != nil {
			is = cur.bench
		}
		if was == is {
			continue
		}
		if changed == nil {
			s.index.bench = maps.Clone(s.index.bench)
			if s.index.bench == nil {
				s.index.bench = map[string]int64{}
			}
		}
		changed = append(changed, m.name)
		if is != nil {
			s.index.bench[m.name] = is.until
		} else {
			delete(s.index.bench, m.name)
		}
	}
	return changed
}

// reindexProbes redoes, in a copy of prev's probe index, the entries of
// the holds changed: the pairs named, every held pair and the auth
// cooldown of a credential changed whole, and the probed bans of the
// models benched or unbenched. Redoing an entry twice changes nothing.
func (s *Snapshot) reindexProbes(prev *Snapshot, changes map[string]*reindexCred, benched []string) {
	e := probeEdit{ix: prev.probes}
	pair := func(cred, model string) {
		pc, nc := lookup(prev.creds, cred), lookup(s.creds, cred)
		var pp, np *pairRec
		if pc != nil {
			pp = lookup(pc.pairs, model)
		}
		if nc != nil {
			np = lookup(nc.pairs, model)
		}
		old, had := pairProbeEntry(pc, pp, lookup(prev.models, model))
		cur, has := pairProbeEntry(nc, np, lookup(s.models, model))
		e.set(old, cur, had, has)
	}
	for name, ch := range changes {
		for model := range ch.models {
			pair(name, model)
		}
		if !ch.full {
			continue
		}
		pc, nc := lookup(prev.creds, name), lookup(s.creds, name)
		old, had := credProbeEntry(pc)
		cur, has := credProbeEntry(nc)
		e.set(old, cur, had, has)
		for _, snap := range []struct {
			s *Snapshot
			c *frozenCred
		}{{prev, pc}, {s, nc}} {
			if snap.c == nil {
				continue
			}
			for p := range snap.s.heldOf(snap.c) {
				pair(name, p.model)
			}
		}
	}
	for _, model := range benched {
		prev.probes.byModel.ascendFrom(modelCred{model: model}, math.MinInt64, func(k modelCred) bool {
			if k.model != model {
				return false
			}
			pair(k.cred, model)
			return true
		})
	}
	s.probes = e.ix
}
