package projections

import "container/heap"

// The ejection cap counts a model's pairs and how many of them are banned
// at an outcome's time (modelBans): on every failing outcome (Facts) and
// every automatic ban that carries a cap (capRefuses). The fold keeps,
// for each model, the pair records whose own ban or whose credential's
// wildcard ban is held (ended or not: bans end with time, not with an
// event), with when each stops being banned, split at the time of the
// latest count into those banned then and those not. A count at a later
// (or earlier) time moves across only the records whose end lies between
// the two times, so it costs the ban ends it crosses, never the model's
// other pairs or its other bans.

// capEnd is when a pair stops being banned: never (perm), or at until
// (Unix ns).
type capEnd struct {
	perm  bool
	until int64
}

// capRec is a held record's end and its place in its model's heaps.
type capRec struct {
	end capEnd
	// on is true in the heap of records banned at the split's time; i
	// is the index in that heap.
	on bool
	i  int
}

// endHeap is a heap of held records by end: the earliest first (min), or
// the latest first.
type endHeap struct {
	recs []*capRec
	max  bool
}

func (h *endHeap) Len() int { return len(h.recs) }
func (h *endHeap) Less(i, j int) bool {
	if h.max {
		return h.recs[i].end.until > h.recs[j].end.until
	}
	return h.recs[i].end.until < h.recs[j].end.until
}
func (h *endHeap) Swap(i, j int) {
	h.recs[i], h.recs[j] = h.recs[j], h.recs[i]
	h.recs[i].i, h.recs[j].i = i, j
}
func (h *endHeap) Push(x any) {
	r := x.(*capRec)
	r.i = len(h.recs)
	h.recs = append(h.recs, r)
}
func (h *endHeap) Pop() any {
	n := len(h.recs) - 1
	r := h.recs[n]
	h.recs[n] = nil
	h.recs = h.recs[:n]
	return r
}

// top is the heap's first record; the heap is not empty.
func (h *endHeap) top() capEnd { return h.recs[0].end }

// modelCap is one model's held bans for the ejection cap's count.
type modelCap struct {
	// held maps each pair record of the model that holds a ban, its own
	// or its credential's wildcard, to when the longer of the two ends.
	held map[*pairRec]*capRec
	// perm counts the held records that never end; the others are in on
	// (a min-heap: ends after at, banned at at) or off (a max-heap: ends
	// at or before at).
	perm    int
	on, off endHeap
	at      int64
	// moves counts the records counts moved between on and off, for
	// tests of the count's cost.
	moves uint64
}

func newModelCap() *modelCap {
	return &modelCap{held: map[*pairRec]*capRec{}, off: endHeap{max: true}}
}

// count is how many held records are banned at t.
func (m *modelCap) count(t int64) int {
	for m.on.Len() > 0 && m.on.top().until <= t {
		m.moves++
		m.put(heap.Pop(&m.on).(*capRec), t)
	}
	for m.off.Len() > 0 && m.off.top().until > t {
		m.moves++
		m.put(heap.Pop(&m.off).(*capRec), t)
	}
	m.at = t
	return m.perm + m.on.Len()
}

// put places a finite record in on or off by the split's time t.
func (m *modelCap) put(r *capRec, t int64) {
	r.on = r.end.until > t
	if r.on {
		heap.Push(&m.on, r)
	} else {
		heap.Push(&m.off, r)
	}
}

// add holds a record that ends at e.
func (m *modelCap) add(e capEnd) *capRec {
	r := &capRec{end: e}
	if e.perm {
		m.perm++
	} else {
		m.put(r, m.at)
	}
	return r
}

// remove drops a held record.
func (m *modelCap) remove(r *capRec) {
	switch {
	case r.end.perm:
		m.perm--
	case r.on:
		heap.Remove(&m.on, r.i)
	default:
		heap.Remove(&m.off, r.i)
	}
}

// capEndOf is when p (of credential c) stops being banned, and false when
// it holds no ban record.
func capEndOf(c *credRec, p *pairRec) (capEnd, bool) {
	b := longerBan(c.wild, p.ban)
	if b == nil {
		return capEnd{}, false
	}
	return capEnd{perm: b.perm, until: b.until}, true
}

// recap brings the cap's record of p (of credential c) up to date after
// its ban, its credential's wildcard ban or its place in pairsOf changed.
func (s *State) recap(c *credRec, p *pairRec) {
	e, has := capEndOf(c, p)
	if has && s.pairsOf[p.model][c] != p {
		has = false // a record the fold no longer keeps
	}
	m := s.caps[p.model]
	var old *capRec
	if m != nil {
		old = m.held[p]
	}
	switch {
	case old != nil && has && old.end == e:
	case has:
		if m == nil {
			if s.caps == nil {
				s.caps = map[string]*modelCap{}
			}
			m = newModelCap()
			s.caps[p.model] = m
		}
		if old != nil {
			m.remove(old)
		}
		m.held[p] = m.add(e)
	case old != nil:
		m.remove(old)
		delete(m.held, p)
		if len(m.held) == 0 {
			delete(s.caps, p.model)
		}
	}
}

// recapCred is recap for every pair of c, after its wildcard ban changed.
func (s *State) recapCred(c *credRec) {
	for _, p := range c.pairs {
		s.recap(c, p)
	}
}
