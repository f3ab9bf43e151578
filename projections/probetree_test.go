package projections

import (
	"maps"
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

func built(keys []probeKey) *probeTree[probeKey] {
	return buildTree(len(keys), func(i int) probeKey { return keys[i] })
}

// ascended is the keys t yields from lo on that end after after.
func ascended(t *probeTree[probeKey], lo probeKey, after int64) []probeKey {
	var out []probeKey
	t.ascendFrom(lo, after, func(k probeKey) bool {
		out = append(out, k)
		return true
	})
	return out
}

// Every version of a probe tree keeps its keys, in order, after later
// inserts and removes made from it (they copy, never change, the nodes
// they share); its keys from any lower bound on that end after any time
// are the set's, and a tree built from the sorted keys holds the same.
func TestPropertyProbeTreeIsPersistent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		small := rapid.Int64Range(0, 5)
		genKey := rapid.Custom(func(t *rapid.T) probeKey {
			// ends is a function of the rest: one key, one end.
			k := probeKey{at: small.Draw(t, "at"), cred: rapid.SampledFrom([]string{"", "a", "ab", "b"}).Draw(t, "cred")}
			k.ends = (k.at*7 + int64(len(k.cred))*3) % 11
			return k
		})
		var versions []*probeTree[probeKey]
		var sets []map[probeKey]bool
		tree, set := (*probeTree[probeKey])(nil), map[probeKey]bool{}
		for range rapid.IntRange(0, 60).Draw(t, "n") {
			k := genKey.Draw(t, "key")
			if rapid.Bool().Draw(t, "remove") {
				tree, set = tree.remove(k), maps.Clone(set)
				delete(set, k)
			} else {
				tree, set = tree.insert(k), maps.Clone(set)
				set[k] = true
			}
			versions, sets = append(versions, tree), append(sets, set)
		}
		for i, v := range versions {
			want := slices.SortedFunc(maps.Keys(sets[i]), probeKey.compare)
			if got := ascended(v, probeKey{at: math.MinInt64}, math.MinInt64); !slices.Equal(got, want) {
				t.Fatalf("version %d holds %v, want %v", i, got, want)
			}
			if got := ascended(built(want), probeKey{at: math.MinInt64}, math.MinInt64); !slices.Equal(got, want) {
				t.Fatalf("built from %v: %v", want, got)
			}
			lo, after := genKey.Draw(t, "lo"), small.Draw(t, "after")*2
			var live []probeKey
			for _, k := range want {
				if k.compare(lo) >= 0 && k.ends > after {
					live = append(live, k)
				}
			}
			for _, tree := range []*probeTree[probeKey]{v, built(want)} {
				if got := ascended(tree, lo, after); !slices.Equal(got, live) {
					t.Fatalf("from %v ending after %d: %v, want %v", lo, after, got, live)
				}
			}
		}
	})
}
