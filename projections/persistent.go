package projections

import (
	"iter"
	"strings"

	"github.com/benbjohnson/immutable"
)

// A Snapshot holds its credentials, each credential's pairs and its models
// in persistent trees (immutable B+trees keyed by name, nodes of up to 32
// entries): publishing a changed record copies the nodes on the path to
// its key and shares every other node with the previous snapshot, so a
// swap costs the records the events since the last one touched, not the
// size of the pool. A node holds its keys and values in one slice and
// nothing else, so a tree costs a few dozen bytes a record on top of the
// record. The trees iterate in key order (byte order, as sort.Strings),
// which is the order the snapshot's queries list in. The writer's State
// keeps plain maps.

// tree is a persistent tree of records keyed by name; nil is empty.
type tree[T any] = *immutable.SortedMap[string, T]

// byteOrder orders keys byte by byte, as sort.Strings does.
type byteOrder struct{}

func (byteOrder) Compare(a, b string) int { return strings.Compare(a, b) }

// newTree is an empty tree.
func newTree[T any]() tree[T] { return immutable.NewSortedMap[string, T](byteOrder{}) }

// newBuilder builds a tree from nothing, changing its own nodes in place
// rather than copying a path for every key (a whole snapshot's trees).
func newBuilder[T any]() *immutable.SortedMapBuilder[string, T] {
	return immutable.NewSortedMapBuilder[string, T](byteOrder{})
}

// edit changes a tree for one publish. It copies the path to each key it
// sets or deletes (the tree before stays as it was) until it has made at
// least two changes and more than an eighth of the tree's size; then it
// copies the tree once into a builder and changes the builder's own nodes
// in place from there on, so a publish of many changes (a batch of a
// replay, a new credential's pairs) costs about one copy of the tree, not
// a path per key (TestABatchedPublishCopiesTheTreeOnce).
type edit[T any] struct {
	t       tree[T]
	b       *immutable.SortedMapBuilder[string, T]
	changes int
}

// editOf starts an edit of t; a nil t is empty.
func editOf[T any](t tree[T]) edit[T] {
	if t == nil {
		t = newTree[T]()
	}
	return edit[T]{t: t}
}

// get is the value under key as edited so far (T's zero value if none).
func (e *edit[T]) get(key string) T {
	var v T
	if e.b != nil {
		v, _ = e.b.Get(key)
	} else {
		v, _ = e.t.Get(key)
	}
	return v
}

// set stores v under key.
func (e *edit[T]) set(key string, v T) {
	if e.change() {
		e.b.Set(key, v)
		return
	}
	e.t = e.t.Set(key, v)
}

// delete removes key.
func (e *edit[T]) delete(key string) {
	if e.change() {
		e.b.Delete(key)
		return
	}
	e.t = e.t.Delete(key)
}

// change counts one change and reports whether it goes to the builder,
// moving the tree into one when the changes are that many.
func (e *edit[T]) change() bool {
	e.changes++
	if e.b == nil && e.changes > 1 && e.changes*8 > e.t.Len() {
		e.b = newBuilder[T]()
		for it := e.t.Iterator(); !it.Done(); {
			k, v, _ := it.Next()
			e.b.Set(k, v)
		}
	}
	return e.b != nil
}

// tree is the edited tree; the edit is over.
func (e *edit[T]) tree() tree[T] {
	if e.b != nil {
		e.t, e.b = e.b.Map(), nil
	}
	return e.t
}

// frozenCred is a credential as a snapshot holds it: a copy of the state's
// record (name, wildcard ban, cooldown, probe claim; its map of pairs nil)
// with the pairs in a tree. The tree's field shadows the record's map, so
// code written against the state's map does not compile against a
// snapshot's credential.
type frozenCred struct {
	credRec
	pairs tree[*pairRec]
}

// freeze copies c's own records (shared: they are replaced, never
// mutated) for a snapshot, with pairs as its pairs.
func (c *credRec) freeze(pairs tree[*pairRec]) *frozenCred {
	return &frozenCred{credRec: credRec{name: c.name, wild: c.wild, cooldown: c.cooldown, probe: c.probe}, pairs: pairs}
}

// lookup is the value stored under key in t, or T's zero value (nil for
// the records) when there is none. A nil tree (the zero Snapshot's) is
// empty.
func lookup[T any](t tree[T], key string) T {
	var v T
	if t != nil {
		v, _ = t.Get(key)
	}
	return v
}

// size is the number of values in t; a nil tree holds none.
func size[T any](t tree[T]) int {
	if t == nil {
		return 0
	}
	return t.Len()
}

// values yields t's values in key order; a nil tree yields none.
func values[T any](t tree[T]) iter.Seq[T] {
	return func(yield func(T) bool) {
		if t == nil {
			return
		}
		for it := t.Iterator(); !it.Done(); {
			if _, v, _ := it.Next(); !yield(v) {
				return
			}
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
