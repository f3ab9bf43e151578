package projections

import "github.com/airouter/airouter/domain"

// The fold keeps a record for every pair the log names, and the records
// are what the ejection cap counts as a model's pairs and what the admin
// API's "the log names it" check reads. A client that invents model names
// (a config that lists no models routes any name) would grow them without
// bound, and with them the checkpoints, /health and the per-pair gauges.
// So once a credential has more than maxQuietPairs records, a record that
// holds nothing (no failures counted since the last reset, no ban, no
// cooldown, no Fail2Ban guards, no recovery probe: a name that only ever
// succeeded, a pair whose ban was lifted) is dropped when the event that
// emptied it is folded. A credential keeps at most maxQuietPairs such
// records plus those holding state; below the bound nothing changes. The
// rule is part of the pure fold, so replicas and replay drop the same
// records at the same events; the next event on a dropped pair makes a
// fresh record, as for a pair never seen.

// maxQuietPairs is the number of a credential's pair records past which
// those holding nothing are dropped: far more models than a credential
// serves when config lists them, so configured pools never lose a record.
const maxQuietPairs = 1000

// holdsNothing reports whether the pair's record carries no state.
func (p *pairRec) holdsNothing() bool {
	return len(p.counts) == 0 && p.streak == (domain.Pos{}) && p.ban == nil && p.cooldown == nil &&
		p.guards == nil && p.probe == nil
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
// maxQuietPairs records. The length is read once, so which records go
// does not depend on the order the map is walked in.
func (s *State) pruneCred(c *credRec) {
	if c == nil || len(c.pairs) <= maxQuietPairs {
		return
	}
	for _, p := range c.pairs {
		s.dropQuiet(c, p)
	}
}

// dropQuiet removes p from c when it holds nothing; a snapshot published
// after it no longer lists the pair (publishCreds reads gone).
func (s *State) dropQuiet(c *credRec, p *pairRec) {
	if !p.holdsNothing() || c.pairs[p.model] != p {
		return
	}
	delete(c.pairs, p.model)
	s.unindexPair(c, p)
	p.gone = true
	s.touchPair(p)
}
