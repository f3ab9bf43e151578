package projections

// probeTree is a persistent ordered set (a treap): insert and remove copy
// the nodes on the path to the key, O(log n) expected, and share every
// other node with the tree they were given, so a snapshot's probe index
// (probeindex.go) costs a swap the entries it changed. A key's priority is
// a hash of the key, so the tree's shape depends on its keys, not on the
// order they came in (but for keys whose hashes tie). Each node keeps the latest end of the keys below it, so a walk
// skips the subtrees whose keys have all ended. The nil tree is empty.
type probeTree[K treeKey[K]] struct {
	key         K
	prio        uint32
	lastEnd     int64
	left, right *probeTree[K]
}

// treeKey is a key of a probeTree: totally ordered, with a hash for its
// priority and the time it ends (Unix nanoseconds) for ascendFrom.
type treeKey[K any] interface {
	compare(K) int
	hash() uint32
	end() int64
}

// fixed is n with its lastEnd recomputed from its key and children.
func (n *probeTree[K]) fixed() *probeTree[K] {
	n.lastEnd = n.key.end()
	if n.left != nil {
		n.lastEnd = max(n.lastEnd, n.left.lastEnd)
	}
	if n.right != nil {
		n.lastEnd = max(n.lastEnd, n.right.lastEnd)
	}
	return n
}

// insert is t with k in it.
func (t *probeTree[K]) insert(k K) *probeTree[K] { return t.insertPrio(k, k.hash()) }

func (t *probeTree[K]) insertPrio(k K, prio uint32) *probeTree[K] {
	if t == nil {
		return (&probeTree[K]{key: k, prio: prio}).fixed()
	}
	c := k.compare(t.key)
	if c == 0 {
		return t
	}
	n := *t
	if c < 0 {
		n.left = t.left.insertPrio(k, prio)
		if n.left.prio > n.prio { // rotate right; n.left is a fresh copy
			l := n.left
			n.left = l.right
			l.right = n.fixed()
			return l.fixed()
		}
		return n.fixed()
	}
	n.right = t.right.insertPrio(k, prio)
	if n.right.prio > n.prio { // rotate left
		r := n.right
		n.right = r.left
		r.left = n.fixed()
		return r.fixed()
	}
	return n.fixed()
}

// remove is t without k; t itself when k is not in it.
func (t *probeTree[K]) remove(k K) *probeTree[K] {
	if t == nil {
		return nil
	}
	switch c := k.compare(t.key); {
	case c == 0:
		return joinTrees(t.left, t.right)
	case c < 0:
		l := t.left.remove(k)
		if l == t.left {
			return t
		}
		n := *t
		n.left = l
		return n.fixed()
	default:
		r := t.right.remove(k)
		if r == t.right {
			return t
		}
		n := *t
		n.right = r
		return n.fixed()
	}
}

// joinTrees is the union of a and b, every key of a before every key of b.
func joinTrees[K treeKey[K]](a, b *probeTree[K]) *probeTree[K] {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.prio > b.prio:
		n := *a
		n.right = joinTrees(a.right, b)
		return n.fixed()
	}
	n := *b
	n.left = joinTrees(a, b.left)
	return n.fixed()
}

// ascendFrom calls yield with the keys from lo on that end after t, in
// order, until it returns false; it reports whether yield never did. It
// reads the path to lo, the keys it yields and the paths to them, skipping
// every subtree whose keys have all ended by t.
func (t *probeTree[K]) ascendFrom(lo K, after int64, yield func(K) bool) bool {
	if t == nil || t.lastEnd <= after {
		return true
	}
	c := t.key.compare(lo)
	if c >= 0 && !t.left.ascendFrom(lo, after, yield) {
		return false
	}
	if c >= 0 && t.key.end() > after && !yield(t.key) {
		return false
	}
	return t.right.ascendFrom(lo, after, yield)
}

// buildTree is the tree of the count keys key(0), key(1)..., sorted and
// distinct, in O(n): each key in turn goes on the right spine, below the
// last node of a higher priority, taking the nodes it passes as its left
// subtree.
func buildTree[K treeKey[K]](count int, key func(int) K) *probeTree[K] {
	nodes := make([]probeTree[K], count)
	var spine []*probeTree[K]
	for i := range nodes {
		n := &nodes[i]
		n.key = key(i)
		n.prio = n.key.hash()
		var last *probeTree[K]
		for len(spine) > 0 && spine[len(spine)-1].prio < n.prio {
			last, spine = spine[len(spine)-1], spine[:len(spine)-1]
		}
		n.left = last
		if len(spine) > 0 {
			spine[len(spine)-1].right = n
		}
		spine = append(spine, n)
	}
	if len(spine) == 0 {
		return nil
	}
	fixAll(spine[0])
	return spine[0]
}

// fixAll sets the lastEnd of every node of a tree just built.
func fixAll[K treeKey[K]](n *probeTree[K]) {
	if n == nil {
		return
	}
	fixAll(n.left)
	fixAll(n.right)
	n.fixed()
}
