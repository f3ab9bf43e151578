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
// Two rules bound them, both part of the pure fold, so replicas, replay and
// checkpoints drop the same records at the same events; the next event on a
// dropped pair makes a fresh record, as for a pair never seen.
//
//   - Once a credential has more than maxQuietPairs records, a record that
//     holds nothing (no failures counted since the last reset, no ban, no
//     cooldown, no Fail2Ban guards, no recovery probe: a name that only
//     ever succeeded, a pair whose ban was lifted) is dropped when the
//     event that emptied it is folded.
//   - A credential never makes a record past maxPairs: before a new one,
//     the records holding nothing are dropped, then, if it is still at
//     maxPairs, the records holding only failure counts are forgotten, those
//     whose failure streak began first (log position order) first, down to
//     forgetBatch below maxPairs.
//     Records holding a ban, a cooldown, a guard or a probe are never
//     dropped, so only they can take a credential past maxPairs.
//
// A model record (its window of bench-countable failures) goes with the
// last pair record of the model, unless a bench is in force.

const (
	// maxQuietPairs is the number of a credential's pair records past
	// which those holding nothing are dropped: far more models than a
	// credential serves when config lists them, so configured pools never
	// lose a record.
	maxQuietPairs = 1000
	// maxCountedPairs is how many records holding only failure counts a
	// credential keeps beyond maxQuietPairs: as many again as the quiet
	// bound, so pools that fail on many models keep their streaks.
	maxCountedPairs = 1000
	// maxPairs is the number of records a credential never makes one past.
	maxPairs = maxQuietPairs + maxCountedPairs
	// forgetBatch is how far below maxPairs forgetting takes a credential.
	forgetBatch = maxCountedPairs / 10
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

// prunePair drops p from c when c has more than maxQuietPairs records and
// p holds nothing.
func (s *State) prunePair(c *credRec, p *pairRec) {
	if c != nil && len(c.pairs) > maxQuietPairs {
		s.dropQuiet(c, p)
	}
}

// pruneLifted drops, past the bound, the records an unban of model on c
// emptied: that pair's, or with model "" (every ban of the credential)
// every record of c that holds nothing.
func (s *State) pruneLifted(c *credRec, model string) {
	switch model {
	case domain.AllModels:
	case "":
		s.pruneCred(c)
	default:
		if p := c.pairs[model]; p != nil {
			s.prunePair(c, p)
		}
	}
}

// pruneCred drops every pair of c that holds nothing when c has more than
// maxQuietPairs records. The length is read once, so which records go does
// not depend on the order they are looked at in.
func (s *State) pruneCred(c *credRec) {
	if c == nil || len(c.pairs) <= maxQuietPairs {
		return
	}
	var quiet []*pairRec
	for _, p := range c.pairs {
		if p.holdsNothing() {
			quiet = append(quiet, p)
		}
	}
	s.dropQuietOnes(c, quiet)
}

// dropQuietOnes drops the records in quiet, in model order, so that the
// Change lists them the same way everywhere.
func (s *State) dropQuietOnes(c *credRec, quiet []*pairRec) {
	slices.SortFunc(quiet, func(a, b *pairRec) int { return strings.Compare(a.model, b.model) })
	for _, p := range quiet {
		s.dropPair(c, p, false)
	}
}

// dropQuiet removes p from c when it holds nothing.
func (s *State) dropQuiet(c *credRec, p *pairRec) {
	if p.holdsNothing() && c.pairs[p.model] == p {
		s.dropPair(c, p, false)
	}
}

// streakOf is a record holding only failure counts, with where its
// streak began, for makeRoom's sort.
type streakOf struct {
	at domain.Pos
	p  *pairRec
}

// makeRoom keeps c below maxPairs records before a new one is made. At
// the bound it drops the records holding nothing; if c is still at the
// bound it forgets the records holding only failure counts whose streaks
// began first, down to forgetBatch below the bound, so the scan runs once
// per forgetBatch new records, not for each. From a state above the bound
// (a checkpoint of more records) one step brings c back under it.
func (s *State) makeRoom(c *credRec) {
	if len(c.pairs) < maxPairs {
		return
	}
	var quiet []*pairRec
	counted := make([]streakOf, 0, len(c.pairs))
	for _, p := range c.pairs {
		switch {
		case p.holdsNothing():
			quiet = append(quiet, p)
		case p.forgettable():
			counted = append(counted, streakOf{p.streak, p})
		}
	}
	s.dropQuietOnes(c, quiet)
	if len(c.pairs) < maxPairs {
		return
	}
	slices.SortFunc(counted, func(a, b streakOf) int {
		if a.at.Seq != b.at.Seq {
			return cmp.Compare(a.at.Seq, b.at.Seq)
		}
		if a.at.Index != b.at.Index {
			return cmp.Compare(a.at.Index, b.at.Index)
		}
		return strings.Compare(a.p.model, b.p.model)
	})
	excess := len(c.pairs) - (maxPairs - forgetBatch)
	for _, r := range counted[:min(excess, len(counted))] {
		s.dropPair(c, r.p, true)
	}
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
