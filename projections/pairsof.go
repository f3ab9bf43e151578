package projections

import "github.com/airouter/airouter/domain"

// PairsOf lists the pairs of one credential the log has named and keeps a
// record of, ordered by model: Pairs for one credential, at the cost of
// that credential's pairs, not the pool's (/health?credential=).
func (s *Snapshot) PairsOf(credential string) []domain.Key {
	c := lookup(s.creds, credential)
	if c == nil {
		return nil
	}
	out := make([]domain.Key, 0, size(c.pairs))
	for p := range values(c.pairs) {
		out = append(out, domain.Key{Credential: credential, Model: p.model})
	}
	return out
}
