package projections

import (
	"iter"

	iradix "github.com/hashicorp/go-immutable-radix/v2"
)

// A Snapshot holds its credentials, each credential's pairs and its models
// in persistent trees (immutable radix trees keyed by name): publishing a
// changed record copies the tree nodes on the path to its key and shares
// every other node with the previous snapshot, so a swap costs the records
// the events since the last one touched, not the size of the pool. The
// trees iterate in key order (byte order, as sort.Strings), which is the
// order the snapshot's queries list in. The writer's State keeps plain maps.

// frozenCred is a credential as a snapshot holds it: a copy of the state's
// record (name, wildcard ban, cooldown, probe claim; its map of pairs nil)
// with the pairs in a tree. The tree's field shadows the record's map, so
// code written against the state's map does not compile against a
// snapshot's credential.
type frozenCred struct {
	credRec
	pairs *iradix.Tree[*pairRec]
}

// freeze copies c's own records (shared: they are replaced, never
// mutated) for a snapshot, with pairs as its pairs.
func (c *credRec) freeze(pairs *iradix.Tree[*pairRec]) *frozenCred {
	return &frozenCred{credRec: credRec{name: c.name, wild: c.wild, cooldown: c.cooldown, probe: c.probe}, pairs: pairs}
}

// lookup is the value stored under key in t, or T's zero value (nil for
// the records) when there is none. A nil tree (the zero Snapshot's) is
// empty.
func lookup[T any](t *iradix.Tree[T], key string) T {
	var v T
	if t != nil {
		v, _ = t.Get([]byte(key))
	}
	return v
}

// size is the number of values in t; a nil tree holds none.
func size[T any](t *iradix.Tree[T]) int {
	if t == nil {
		return 0
	}
	return t.Len()
}

// values yields t's values in key order; a nil tree yields none.
func values[T any](t *iradix.Tree[T]) iter.Seq[T] {
	return func(yield func(T) bool) {
		if t != nil {
			t.Root().Walk(func(_ []byte, v T) bool { return !yield(v) })
		}
	}
}

// bans yields every ban record the state holds, nil ones included: each
// credential's wildcard ban and each of its pairs' bans.
func (s *State) bans() iter.Seq[*banRec] {
	return func(yield func(*banRec) bool) {
		for _, c := range s.creds {
			if !yield(c.wild) {
				return
			}
			for _, p := range c.pairs {
				if !yield(p.ban) {
					return
				}
			}
		}
	}
}
