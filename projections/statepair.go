package projections

import (
	"time"

	"github.com/airouter/airouter/domain"
)

// Pair is Snapshot.Pair on the state as it is now, without a snapshot of
// the whole pool: it reads a snapshot holding only key's credential, pair
// and model, so the one rule (Snapshot.Pair) answers at the cost of one
// pair (the timeline asks it for every automatic ban the fold left out).
func (s *State) Pair(key domain.Key, now time.Time) PairView {
	n := s.header()
	if c := s.creds[key.Credential]; c != nil {
		pairs := newTree[*pairRec]()
		if p := c.pairs[key.Model]; p != nil {
			pairs = pairs.Set(key.Model, p.frozen())
		}
		n.creds = newTree[*frozenCred]().Set(c.name, c.freeze(pairs))
	}
	if m := s.models[key.Model]; m != nil {
		n.models = newTree[*modelRec]().Set(m.name, m.frozen())
	}
	return n.Pair(key, now)
}
