package projections

import (
	"encoding/json"
	"fmt"
	"iter"

	"github.com/airouter/airouter/domain"
)

// A checkpoint is written from one of two sources holding the same
// records: the writer's State (its maps, walked in sorted key order) and a
// published Snapshot (its persistent trees, which iterate in the same byte
// order). Both walk marshalCheckpoint over their records, so the format
// has one source and a checkpoint made from a snapshot has the bytes its
// state gave at its position. A snapshot is immutable, so the
// checkpointer marshals it on its own goroutine while the writer goes on
// folding.
//
// One thing a snapshot may hold out of date: a pair record's last use.
// An event that only uses a record (a success on a pair holding nothing,
// the most common event) does not make the next snapshot copy it; the
// state lists it stale instead, and CheckpointOf hands those last uses
// over beside the snapshot.

// checkpointCreds yields each credential's own record with its pairs, in
// name order, the pairs in model order.
type checkpointCreds = iter.Seq2[*credRec, checkpointPairs]

// checkpointPairs are a credential's n pair records (all): the count sizes
// the checkpoint's list of them at once.
type checkpointPairs struct {
	n   int
	all iter.Seq[*pairRec]
}

// Checkpoint is a published snapshot with the last uses of the pair
// records it holds out of date: everything a checkpoint at the snapshot's
// position holds. Immutable; any goroutine may marshal it.
type Checkpoint struct {
	snap *Snapshot
	// lasts are the last uses newer than the snapshot's copies, by
	// credential and model.
	lasts []pairLast
}

type pairLast struct {
	cred, model string
	last        domain.Pos
}

// CheckpointOf is the checkpoint of the state at snap, the snapshot just
// published from it (Live.AfterPublish). It copies the last uses of the
// records listed stale (a few words each, none for a record changed since
// the previous snapshot) and nothing else. A snapshot that is not the
// latest published from s, or that is behind it, is an error. Writer
// goroutine only.
func (s *State) CheckpointOf(snap *Snapshot) (*Checkpoint, error) {
	if snap == nil || snap.mark == nil || snap.mark != s.mark || snap.clears != s.clears || snap.pos != s.pos {
		return nil, fmt.Errorf("checkpoint of a snapshot at %s: not the latest published from the state at %s", snapPos(snap), s.pos)
	}
	s.compactStale()
	cp := &Checkpoint{snap: snap, lasts: make([]pairLast, len(s.stale))}
	for i, p := range s.stale {
		cp.lasts[i] = pairLast{p.cred, p.model, p.last}
	}
	return cp, nil
}

func snapPos(snap *Snapshot) string {
	if snap == nil {
		return "nil"
	}
	return snap.pos.String()
}

// listStale lists p as stale. A state folded without publishing (a
// replay) never empties the list, so past twice the records it held at
// the last compaction it is compacted: the list stays within about twice
// the stale records, and the records the fold dropped are not kept alive.
func (s *State) listStale(p *pairRec) {
	p.stale = true
	s.stale = append(s.stale, p)
	if len(s.stale) >= max(2*s.staleKept, 1024) {
		s.compactStale()
	}
}

// compactStale keeps in the list each stale record still in the state
// once: a record copied by a publish since it was listed (no longer
// stale) or dropped by the fold goes, and a record listed again after
// such a copy is kept once.
func (s *State) compactStale() {
	kept := s.stale[:0]
	for _, p := range s.stale {
		if p.stale && !p.gone {
			p.stale = false // a second entry of p is dropped
			kept = append(kept, p)
		}
	}
	for _, p := range kept {
		p.stale = true
	}
	clear(s.stale[len(kept):])
	s.stale, s.staleKept = kept, len(kept)
}

// clearStale forgets the stale records: a full snapshot copied them all.
func (s *State) clearStale() {
	for _, p := range s.stale {
		p.stale = false
	}
	clear(s.stale)
	s.stale = s.stale[:0]
}

// Seq is the stream sequence of the last event the checkpoint holds.
func (c *Checkpoint) Seq() uint64 { return c.snap.pos.Seq }

// MarshalCheckpoint renders the checkpoint as versioned, deterministic
// bytes: exactly those State.MarshalCheckpoint gave at its position.
func (c *Checkpoint) MarshalCheckpoint() ([]byte, error) {
	lasts := make(map[string]map[string]domain.Pos)
	for _, l := range c.lasts {
		if lasts[l.cred] == nil {
			lasts[l.cred] = map[string]domain.Pos{}
		}
		lasts[l.cred][l.model] = l.last
	}
	creds := func(yield func(*credRec, checkpointPairs) bool) {
		for fc := range values(c.snap.creds) {
			if !yield(&fc.credRec, checkpointPairs{size(fc.pairs), withLasts(values(fc.pairs), lasts[fc.name])}) {
				return
			}
		}
	}
	return marshalCheckpoint(c.snap, size(c.snap.creds), creds, size(c.snap.models), values(c.snap.models))
}

// withLasts yields pairs, each with its last use from lasts where it has
// one there (a copy: the snapshot's record stays as it is).
func withLasts(pairs iter.Seq[*pairRec], lasts map[string]domain.Pos) iter.Seq[*pairRec] {
	if len(lasts) == 0 {
		return pairs
	}
	return func(yield func(*pairRec) bool) {
		for p := range pairs {
			if last, ok := lasts[p.model]; ok {
				q := *p
				q.last = last
				p = &q
			}
			if !yield(p) {
				return
			}
		}
	}
}

// stateCheckpointCreds walks the state's credentials and pairs in sorted
// key order.
func (s *State) stateCheckpointCreds(yield func(*credRec, checkpointPairs) bool) {
	for _, name := range sortedKeys(s.creds) {
		c := s.creds[name]
		if !yield(c, checkpointPairs{len(c.pairs), sortedValues(c.pairs)}) {
			return
		}
	}
}

// sortedValues yields m's values in key order.
func sortedValues[V any](m map[string]V) iter.Seq[V] {
	return func(yield func(V) bool) {
		for _, k := range sortedKeys(m) {
			if !yield(m[k]) {
				return
			}
		}
	}
}

// marshalCheckpoint renders the header h (position, counters, settings,
// policy) and the records as a checkpoint. nCreds and nModels size the
// lists.
func marshalCheckpoint(h *Snapshot, nCreds int, creds checkpointCreds, nModels int, models iter.Seq[*modelRec]) ([]byte, error) {
	doc := checkpointDoc{
		Version: CheckpointVersion, Seq: h.pos.Seq, Index: h.pos.Index, LastEventAt: h.lastAt,
		Skipped: h.skipped, PairsForgotten: h.forgotten, Settings: h.settings, Policy: h.policy,
		Credentials: make([]checkpointCred, 0, nCreds),
		Models:      make([]checkpointModel, 0, nModels),
	}
	var counts []byte // every pair's counts, encoded (countObject)
	for c, pairs := range creds {
		cc := checkpointCred{Name: c.name, Wildcard: checkpointBanOf(c.wild), Pairs: make([]checkpointPair, 0, pairs.n)}
		if c.cooldown != nil {
			cd := c.cooldown.cd
			cc.Cooldown = &cd
		}
		if r := openCredProbe(c); r != nil {
			cc.Probe = &checkpointProbe{Claim: r.claim, At: r.at}
		}
		for p := range pairs.all {
			cc.Pairs = append(cc.Pairs, checkpointPairOf(p, &counts))
		}
		doc.Credentials = append(doc.Credentials, cc)
	}
	for m := range models {
		cm := checkpointModel{Name: m.name, Window: m.window}
		if m.bench != nil {
			b := m.bench.bench
			cm.Bench = &b
		}
		doc.Models = append(doc.Models, cm)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("marshal projection checkpoint at %s: %w", h.pos, err)
	}
	return b, nil
}

// checkpointPairOf is the pair's record, a state's or a snapshot's, as a
// checkpoint holds it; its counts are encoded at the end of *counts.
func checkpointPairOf(p *pairRec, counts *[]byte) checkpointPair {
	cp := checkpointPair{Model: p.model, Last: p.last.Seq, LastIx: p.last.Index,
		Ban: checkpointBanOf(p.ban), Probe: checkpointProbeOf(p), Guards: checkpointGuardsOf(p.guards)}
	if c := p.codeCounts(); c.Len() > 0 {
		cp.Counts, cp.Streak, cp.StreakIx = encodedCounts(c, counts), p.streak.Seq, p.streak.Index
	}
	if p.cooldown != nil {
		cd := p.cooldown.cd
		cp.Cooldown = &cd
	}
	return cp
}

// countObject is a pair's failures per status code in a checkpoint: an
// object keyed by code, as encoding/json writes a map[int]int. A
// checkpoint being written holds it encoded (a stretch of one
// buffer shared by the checkpoint's pairs, so writing a checkpoint builds
// no map and makes no allocation per counted pair); one read holds it
// decoded (byCode). The zero value holds none and is left out.
type countObject struct {
	encoded []byte
	byCode  map[int]int
}

// encodedCounts appends c's object to *buf and holds it.
func encodedCounts(c CodeCounts, buf *[]byte) countObject {
	n := len(*buf)
	*buf = c.AppendJSON(*buf, nil)
	return countObject{encoded: (*buf)[n:len(*buf):len(*buf)]}
}

// IsZero reports whether it holds no counts (omitzero: the field is left
// out, as omitempty left out an empty map).
func (o *countObject) IsZero() bool { return len(o.encoded) == 0 && len(o.byCode) == 0 }

// MarshalJSON writes the counts held. IsZero and MarshalJSON are pointer
// methods: encoding/json calls them on the pair's field in place (a
// slice's element), without copying it to the heap.
func (o *countObject) MarshalJSON() ([]byte, error) {
	if o.encoded != nil {
		return o.encoded, nil
	}
	return CodeCounts{byCode: o.byCode}.AppendJSON(nil, nil), nil
}

// UnmarshalJSON reads the object as encoding/json reads a map[int]int.
func (o *countObject) UnmarshalJSON(b []byte) error {
	return json.Unmarshal(b, &o.byCode)
}
