package projections

import (
	"time"

	"github.com/airouter/airouter/domain"
)

// Snapshot is an immutable copy of a State as of one log position. Any
// number of goroutines may read it; nothing changes it. Time-dependent
// answers (is this ban still on?) take the reader's now.
type Snapshot struct {
	pos      domain.Pos
	lastAt   time.Time
	skipped  Skipped
	settings *domain.FallbackSettings
	policy   *PolicyInForce
	// creds and models hold frozen records: copies made when the snapshot
	// was built, or records shared with an earlier snapshot, in persistent
	// trees that share every node an event did not touch (persistent.go).
	creds  tree[*frozenCred]
	models tree[*modelRec]
	index  blockIndex
	// probes orders the probed holds by when a probe can be due
	// (probeindex.go).
	probes probeIndex
	// claims is State.claims when the snapshot was built.
	claims uint64
	// forgotten is State.PairsForgotten when the snapshot was built.
	forgotten uint64
	// mark and clears are the state's when the snapshot was built
	// (SnapshotAfter).
	mark   *publishMark
	clears uint64
}

// publishMark names a state for its snapshots; it has a size so that two
// marks are never the same pointer.
type publishMark struct{ _ byte }

// Seq is the stream sequence of the last event the snapshot reflects.
func (s *Snapshot) Seq() uint64 { return s.pos.Seq }

// Pos is the log position of the last event the snapshot reflects.
func (s *Snapshot) Pos() domain.Pos { return s.pos }

// LastEventAt is the time of the last event the snapshot reflects.
func (s *Snapshot) LastEventAt() time.Time { return s.lastAt }

// Skipped counts the events the fold ignored up to Seq.
func (s *Snapshot) Skipped() Skipped { return s.skipped }

// Settings returns the failover settings last changed at runtime, and false
// when no one has changed them (config applies).
func (s *Snapshot) Settings() (domain.FallbackSettings, bool) {
	if s.settings == nil {
		return domain.FallbackSettings{}, false
	}
	return *s.settings, true
}

// Snapshot builds a snapshot of the whole state. It copies every record;
// Live publishes incrementally instead.
func (s *State) Snapshot() *Snapshot {
	n := s.header()
	creds := newBuilder[*frozenCred]()
	for name, c := range s.creds {
		pairs := newBuilder[*pairRec]()
		for model, p := range c.pairs {
			pairs.Set(model, p.frozen())
		}
		creds.Set(name, c.freeze(pairs.Map()))
	}
	n.creds = creds.Map()
	models := newBuilder[*modelRec]()
	for name, m := range s.models {
		models.Set(name, m.frozen())
	}
	n.models = models.Map()
	n.indexAll()
	n.mark, n.clears = s.mark, s.clears
	return n
}

// SnapshotAfter is a snapshot of the whole state, as Snapshot, built from
// prev when prev is the latest snapshot SnapshotAfter or Snapshot built
// from this state: it copies only the records changed since and shares
// the rest with prev, so a caller that folds and reads by turns (whatif)
// pays for what it folded, not for the pool. Any other prev (nil, another
// state's, or one this state has published past) gets a full build. It
// resets the state's record of what changed, so it is for the state's own
// folder only, never on a Live's state (Live publishes the same way).
func (s *State) SnapshotAfter(prev *Snapshot) *Snapshot {
	if prev == nil || s.mark == nil || prev.mark != s.mark || prev.clears != s.clears {
		prev = nil
	}
	return s.publish(prev)
}

// publish builds the next snapshot from prev, copying only the records
// changed since prev was built; everything else, the block index included,
// is shared with prev. prev must have been built from this state, after
// the last publish. The dirty marks are cleared.
func (s *State) publish(prev *Snapshot) *Snapshot {
	if prev == nil {
		n := s.Snapshot()
		s.clearDirty()
		s.clearStale() // every record was copied with its last use
		n.mark, n.clears = s.mark, s.clears
		return n
	}
	n := s.header()
	n.creds, n.models, n.index, n.probes = prev.creds, prev.models, prev.index, prev.probes
	reindex := s.publishCreds(prev, n)
	var benched []*modelRec
	if s.publishModels(prev, n) {
		benched = s.dirtyModels // among them, the models whose bench changed
	}
	n.reindexAfter(prev, reindex, benched)
	s.clearDirty()
	n.mark, n.clears = s.mark, s.clears
	return n
}

// credDraft is a credential being published: its fresh copy and the edit
// of prev's tree of its pairs, done when the publish has gone through
// every changed record.
type credDraft struct {
	fc    *frozenCred
	pairs edit[*pairRec]
}

// publishCreds gives n fresh copies of the changed credentials and pairs,
// inserted into prev's trees (so the rest is shared), and returns the
// block index entries that changed. A pair the fold dropped (gone) is
// deleted from its credential's tree.
func (s *State) publishCreds(prev, n *Snapshot) map[string]*reindexCred {
	reindex := map[string]*reindexCred{}
	mark := func(cred string, full bool, model string) {
		r := reindex[cred]
		if r == nil {
			r = &reindexCred{models: map[string]bool{}}
			reindex[cred] = r
		}
		if full {
			r.full = true
		} else {
			r.models[model] = true
		}
	}
	if len(s.dirtyCreds)+len(s.dirtyPairs) == 0 {
		return reindex
	}
	drafts := make(map[string]*credDraft, len(s.dirtyCreds)+1)
	own := func(name string) *credDraft {
		if d := drafts[name]; d != nil {
			return d
		}
		d := &credDraft{fc: s.creds[name].freeze(nil)}
		if old := lookup(prev.creds, name); old != nil {
			d.pairs = editOf(old.pairs)
			if old.wild != d.fc.wild || old.cooldown != d.fc.cooldown || old.probe != d.fc.probe {
				mark(name, true, "")
			}
		} else {
			d.pairs = editOf[*pairRec](nil)
			mark(name, true, "")
		}
		drafts[name] = d
		return d
	}
	for _, c := range s.dirtyCreds {
		own(c.name)
	}
	for _, p := range s.dirtyPairs {
		d := own(p.cred)
		old := d.pairs.get(p.model)
		if p.gone {
			if old != nil {
				d.pairs.delete(p.model)
				if old.ban != nil || old.cooldown != nil {
					mark(p.cred, false, p.model)
				}
			}
			continue
		}
		d.pairs.set(p.model, p.frozen())
		if old == nil && (p.ban != nil || p.cooldown != nil) ||
			old != nil && (old.ban != p.ban || old.cooldown != p.cooldown || old.probe != p.probe) {
			mark(p.cred, false, p.model)
		}
	}
	creds := editOf(prev.creds)
	for name, d := range drafts {
		d.fc.pairs = d.pairs.tree()
		creds.set(name, d.fc)
	}
	n.creds = creds.tree()
	return reindex
}

// publishModels gives n fresh copies of the changed models and reports
// whether a bench changed.
func (s *State) publishModels(prev, n *Snapshot) bool {
	if len(s.dirtyModels) == 0 {
		return false
	}
	benchChanged := false
	models := editOf(prev.models)
	for _, m := range s.dirtyModels {
		var oldBench *benchRec
		if old := lookup(prev.models, m.name); old != nil {
			oldBench = old.bench
		}
		if m.gone { // dropped with its model's last pair (prune.go)
			models.delete(m.name)
			benchChanged = benchChanged || oldBench != nil
			continue
		}
		benchChanged = benchChanged || oldBench != m.bench
		models.set(m.name, m.frozen())
	}
	n.models = models.tree()
	return benchChanged
}

func (s *State) header() *Snapshot {
	return &Snapshot{pos: s.pos, lastAt: s.lastAt, skipped: s.skipped, settings: s.settings, policy: s.policy, claims: s.claims, forgotten: s.forgotten}
}

func (s *State) clearDirty() {
	if s.mark == nil {
		s.mark = &publishMark{}
	}
	s.clears++
	for _, c := range s.dirtyCreds {
		c.dirty = false
	}
	for _, p := range s.dirtyPairs {
		p.dirty, p.stale = false, false // copied with its last use
	}
	for _, m := range s.dirtyModels {
		m.dirty = false
	}
	clear(s.dirtyCreds)
	clear(s.dirtyPairs)
	clear(s.dirtyModels)
	s.dirtyCreds, s.dirtyPairs, s.dirtyModels = s.dirtyCreds[:0], s.dirtyPairs[:0], s.dirtyModels[:0]
}

// frozen copies the pair for a snapshot. Ban and cooldown records are never
// mutated, so they are shared. The counts become a slice, 16 bytes a code
// where a copy of the map took about 150 (every pair of a failing pool
// holds some). The streak and the last use are copied too, so the
// snapshot's checkpoint is the state's (checkpoint_source.go).
func (p *pairRec) frozen() *pairRec {
	f := &pairRec{cred: p.cred, model: p.model, ban: p.ban, cooldown: p.cooldown, probe: p.probe, guards: p.guards,
		streak: p.streak, last: p.last}
	if len(p.counts) > 0 {
		f.frozenCounts = make([]codeCount, 0, len(p.counts))
		for code, n := range p.counts {
			f.frozenCounts = append(f.frozenCounts, codeCount{code, n})
		}
	}
	return f
}

// codeCount is one status code's failures in a snapshot's pair.
type codeCount struct{ code, n int }

// frozen copies the model for a snapshot. The window is shared up to its
// current length: the state only appends past it or drops it whole.
func (m *modelRec) frozen() *modelRec {
	n := len(m.window)
	return &modelRec{name: m.name, window: m.window[:n:n], bench: m.bench}
}
