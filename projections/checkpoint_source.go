package projections

import (
	"encoding/json"
	"fmt"
	"iter"
)

// A checkpoint is written from one of two sources holding the same
// records: the writer's State (its maps, walked in sorted key order) and a
// Snapshot (its persistent trees, which iterate in the same byte order).
// Both walk marshalCheckpoint over their records, so the format has one
// source and a snapshot gives the bytes its state gave at its position.
// A snapshot is immutable, so the checkpointer marshals it on its own
// goroutine while the writer goes on folding.

// checkpointCreds yields each credential's own record with its pairs, in
// name order, the pairs in model order.
type checkpointCreds = iter.Seq2[*credRec, iter.Seq[*pairRec]]

// MarshalCheckpoint renders the snapshot as versioned, deterministic
// bytes: exactly those State.MarshalCheckpoint gave at the snapshot's
// position. Any goroutine may call it.
func (s *Snapshot) MarshalCheckpoint() ([]byte, error) {
	creds := func(yield func(*credRec, iter.Seq[*pairRec]) bool) {
		for fc := range values(s.creds) {
			if !yield(&fc.credRec, values(fc.pairs)) {
				return
			}
		}
	}
	return marshalCheckpoint(s, size(s.creds), creds, size(s.models), values(s.models))
}

// stateCheckpointCreds walks the state's credentials and pairs in sorted
// key order.
func (s *State) stateCheckpointCreds(yield func(*credRec, iter.Seq[*pairRec]) bool) {
	for _, name := range sortedKeys(s.creds) {
		c := s.creds[name]
		if !yield(c, sortedValues(c.pairs)) {
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
	for c, pairs := range creds {
		cc := checkpointCred{Name: c.name, Wildcard: checkpointBanOf(c.wild), Pairs: []checkpointPair{}}
		if c.cooldown != nil {
			cd := c.cooldown.cd
			cc.Cooldown = &cd
		}
		if r := openCredProbe(c); r != nil {
			cc.Probe = &checkpointProbe{Claim: r.claim, At: r.at}
		}
		for p := range pairs {
			cc.Pairs = append(cc.Pairs, checkpointPairOf(p))
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
// checkpoint holds it.
func checkpointPairOf(p *pairRec) checkpointPair {
	cp := checkpointPair{Model: p.model, Last: p.last.Seq, LastIx: p.last.Index,
		Ban: checkpointBanOf(p.ban), Probe: checkpointProbeOf(p), Guards: checkpointGuardsOf(p.guards)}
	if counts := p.countsByCode(); len(counts) > 0 {
		cp.Counts, cp.Streak, cp.StreakIx = counts, p.streak.Seq, p.streak.Index
	}
	if p.cooldown != nil {
		cd := p.cooldown.cd
		cp.Cooldown = &cd
	}
	return cp
}

// countsByCode is the pair's failures per status code: the state's map,
// or one made from a snapshot's frozen counts; nil when there are none.
func (p *pairRec) countsByCode() map[int]int {
	if len(p.counts) > 0 || len(p.frozenCounts) == 0 {
		return p.counts
	}
	m := make(map[int]int, len(p.frozenCounts))
	for _, c := range p.frozenCounts {
		m[c.code] = c.n
	}
	return m
}
