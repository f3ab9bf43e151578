package projections

import (
	"slices"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// PairsOf is Pairs narrowed to one credential, in the same order, from the
// full snapshot and from the incremental one Live publishes alike.
func TestPairsOfIsPairsOfOneCredential(t *testing.T) {
	evs := numbered(
		outcome(0, "b", "m2", 500), outcome(0, "a", "m1", 500), outcome(0, "b", "m1", 429),
		autoBan(time.Second, "ban/b/m3", "b", "m3", 429, time.Hour), outcome(2*time.Second, "c", "m1", 200),
	)
	live := NewLive(nil)
	for _, ev := range evs {
		live.Apply(ev, 0)
	}
	for _, s := range []*Snapshot{fold(evs).Snapshot(), live.Load()} {
		for _, cred := range []string{"a", "b", "c", "nobody"} {
			var want []domain.Key
			for _, k := range s.Pairs() {
				if k.Credential == cred {
					want = append(want, k)
				}
			}
			if got := s.PairsOf(cred); !slices.Equal(got, want) {
				t.Errorf("PairsOf(%s) = %v, want %v", cred, got, want)
			}
		}
	}
	if got := live.Load().PairsOf("b"); len(got) != 3 {
		t.Errorf("b has pairs %v, want m1, m2 and m3", got)
	}
}
