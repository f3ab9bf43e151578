package projections

import "github.com/airouter/airouter/domain"

// PairsOf lists the pairs of one credential the log has named and keeps a
// record of, ordered by model: Pairs for one credential, at the cost of
// that credential's pairs, not the pool's (/health?credential=).
func (s *Snapshot) PairsOf(credential string) []domain.Key {
	c := s.creds[credential]
	if c == nil {
		return nil
	}
	out := make([]domain.Key, 0, len(c.pairs))
	for _, model := range sortedKeys(c.pairs) {
		out = append(out, domain.Key{Credential: credential, Model: model})
	}
	return out
}
