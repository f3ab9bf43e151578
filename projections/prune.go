package projections

import (
	"cmp"
	"slices"
	"strings"

	"github.com/airouter/airouter/domain"
)

// The fold keeps a record for every pair the log names, and the records
// are what the ejection cap counts as a model's pairs and what the admin
// API's "the log names it" check reads. A client that invents model names
// (a config that lists no models routes any name) would grow them without
// bound, and with them the checkpoints, /health and the per-pair gauges.
// One rule bounds them, part of the pure fold, so replicas, replay and
// checkpoints drop the same records at the same events; the next event on
// a dropped pair makes a fresh record, as for a pair never seen.
//
// A credential never makes a record past maxPairs: before a new one, it
// drops records down to forgetBatch below maxPairs, first those holding
// nothing (no failures counted since the last reset, no ban, no cooldown,
// no Fail2Ban guards, no recovery probe), the least recently used first
// (the position of the last event folded on the record, pairRec.last),
// then those holding only failure counts, those whose failure streak
// began first (log position order) first. Below maxPairs nothing is
// dropped, so a name in use keeps its record and what hangs on it (its
// series, the proxy's windows). Records holding a ban, a cooldown, a
// guard or a probe are never dropped, so only they can take a credential
// past maxPairs.
//
// A model record (its window of bench-countable failures) goes with the
// last pair record of the model, unless a bench is in force.

const (
	// maxPairs is the number of records a credential never makes one
	// past: far more models than a credential serves when config lists
	// them, so configured pools never lose a record.
	maxPairs = 2000
	// forgetBatch is how far below maxPairs dropping takes a credential,
	// so the scan runs once per forgetBatch new records, not for each.
	forgetBatch = maxPairs / 20
)

// PairsForgotten counts the pair records forgotten while they held failure
// counts, since the log's start.
func (s *State) PairsForgotten() uint64 { return s.forgotten }

// holdsNothing reports whether the pair's record carries no state.
func (p *pairRec) holdsNothing() bool {
	return len(p.counts) == 0 && p.streak == (domain.Pos{}) && p.onlyCounts()
}

// forgettable reports whether the pair's record holds failure counts and
// nothing else.
func (p *pairRec) forgettable() bool { return len(p.counts) > 0 && p.onlyCounts() }

// onlyCounts reports whether the record holds no ban, cooldown, guard or
// probe.
func (p *pairRec) onlyCounts() bool {
	return p.ban == nil && p.cooldown == nil && p.guards == nil && p.probe == nil
}

// used records the event being folded, which names p's pair, as the
// record's last use: makeRoom drops the records holding nothing least
// recently used first. A use alone does not make the next snapshot copy
// the record (most events are successes on records holding nothing); it
// is listed stale instead, and its last use goes to the next checkpoint
// beside the snapshot (CheckpointOf).
func (s *State) used(p *pairRec) {
	p.last = s.pos
	if !p.dirty && !p.stale {
		s.listStale(p)
	}
}

// heldAt is a record with the log position makeRoom orders it by: its
// last use for a record holding nothing, where its streak began for one
// holding only failure counts.
type heldAt struct {
	at domain.Pos
	p  *pairRec
}

// makeRoom keeps c below maxPairs records before a new one is made. At
// the bound it drops records down to forgetBatch below it: those holding
// nothing, least recently used first, then those holding only failure
// counts, oldest streak first (counted as forgotten). From a state above
// the bound (a checkpoint of more records) one step brings c back under
// it as far as such records allow.
func (s *State) makeRoom(c *credRec) {
	if len(c.pairs) < maxPairs {
		return
	}
	// One buffer: the quiet records from its start, the counted from its
	// end.
	buf := make([]heldAt, len(c.pairs))
	q, k := 0, len(buf)
	for _, p := range c.pairs {
		switch {
		case p.holdsNothing():
			buf[q] = heldAt{p.last, p}
			q++
		case p.forgettable():
			k--
			buf[k] = heldAt{p.streak, p}
		}
	}
	quiet, counted := buf[:q], buf[k:]
	excess := len(c.pairs) - (maxPairs - forgetBatch)
	excess -= s.dropOldest(c, quiet, excess, false)
	s.dropOldest(c, counted, excess, true)
}

// dropOldest drops the n records of recs at the earliest positions (ties
// by model, so the Change lists them the same way everywhere), or all of
// them when there are fewer, and returns how many it dropped.
func (s *State) dropOldest(c *credRec, recs []heldAt, n int, forgotten bool) int {
	n = max(0, min(n, len(recs)))
	if n == 0 {
		return 0
	}
	slices.SortFunc(recs, func(a, b heldAt) int {
		if a.at.Seq != b.at.Seq {
			return cmp.Compare(a.at.Seq, b.at.Seq)
		}
		if a.at.Index != b.at.Index {
			return cmp.Compare(a.at.Index, b.at.Index)
		}
		return strings.Compare(a.p.model, b.p.model)
	})
	for _, r := range recs[:n] {
		s.dropPair(c, r.p, forgotten)
	}
	return n
}

// dropPair removes p from c, reports it in the step's Change, and drops
// the model's record when p was its last pair; a snapshot published after
// it no longer lists the pair (publishCreds reads gone).
func (s *State) dropPair(c *credRec, p *pairRec, forgotten bool) {
	delete(c.pairs, p.model)
	s.unindexPair(c, p)
	p.gone = true
	s.touchPair(p)
	if forgotten {
		s.forgotten++
	}
	s.dropped = append(s.dropped, PairDrop{Key: domain.Key{Credential: c.name, Model: p.model}, Forgotten: forgotten})
	s.dropModel(p.model)
}

// dropModel removes the model's record when no pair of it is left and no
// bench is in force at the event's time: its window counts toward a bench
// of pairs the fold no longer keeps.
func (s *State) dropModel(name string) {
	m := s.models[name]
	if m == nil || len(s.pairsOf[name]) > 0 || (m.bench != nil && m.bench.until > nanos(s.lastAt)) {
		return
	}
	delete(s.models, name)
	m.gone = true
	s.touchModel(m)
}

// reportDrops hands the pairs the step dropped to its Change (none without
// a report).
func (s *State) reportDrops(ch *Change) {
	if len(s.dropped) == 0 {
		return
	}
	if ch != nil {
		ch.Dropped = append(ch.Dropped, s.dropped...)
	}
	clear(s.dropped)
	s.dropped = s.dropped[:0]
}

// PairsForgotten is State.PairsForgotten as of the snapshot.
func (s *Snapshot) PairsForgotten() uint64 { return s.forgotten }
