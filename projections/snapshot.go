package projections

import (
	"maps"
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
	// was built, or records shared with an earlier snapshot.
	creds  map[string]*credRec
	models map[string]*modelRec
	index  blockIndex
	// claims is State.claims when the snapshot was built.
	claims uint64
}

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
	n.creds = make(map[string]*credRec, len(s.creds))
	for name, c := range s.creds {
		fc := &credRec{name: name, wild: c.wild, cooldown: c.cooldown, probe: c.probe, pairs: make(map[string]*pairRec, len(c.pairs))}
		for model, p := range c.pairs {
			fc.pairs[model] = p.frozen()
		}
		n.creds[name] = fc
	}
	n.models = make(map[string]*modelRec, len(s.models))
	for name, m := range s.models {
		n.models[name] = m.frozen()
	}
	n.indexAll()
	return n
}

// publish builds the next snapshot from prev, copying only the records
// changed since prev was built; everything else, the block index included,
// is shared with prev. prev must have been built from this state. The dirty
// marks are cleared.
func (s *State) publish(prev *Snapshot) *Snapshot {
	if prev == nil {
		n := s.Snapshot()
		s.clearDirty()
		return n
	}
	n := s.header()
	n.creds, n.models, n.index = prev.creds, prev.models, prev.index
	reindex := s.publishCreds(prev, n)
	if s.publishModels(prev, n) {
		n.indexAll() // a bench shows in every credential's entries
	} else {
		n.reindex(reindex)
	}
	s.clearDirty()
	return n
}

// publishCreds gives n fresh copies of the changed credentials and pairs,
// and returns the block index entries that changed.
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
	n.creds = maps.Clone(prev.creds)
	fresh := make(map[string]*credRec, len(s.dirtyCreds)+1)
	own := func(name string) *credRec {
		if fc := fresh[name]; fc != nil {
			return fc
		}
		fc := &credRec{name: name, wild: s.creds[name].wild, cooldown: s.creds[name].cooldown, probe: s.creds[name].probe}
		if old := prev.creds[name]; old != nil {
			fc.pairs = maps.Clone(old.pairs)
			if old.wild != fc.wild || old.cooldown != fc.cooldown || old.probe != fc.probe {
				mark(name, true, "")
			}
		} else {
			fc.pairs = map[string]*pairRec{}
			mark(name, true, "")
		}
		fresh[name] = fc
		n.creds[name] = fc
		return fc
	}
	for _, c := range s.dirtyCreds {
		own(c.name)
	}
	for _, p := range s.dirtyPairs {
		fc := own(p.cred)
		if p.gone {
			if old, ok := fc.pairs[p.model]; ok {
				delete(fc.pairs, p.model)
				if old.ban != nil || old.cooldown != nil {
					mark(p.cred, false, p.model)
				}
			}
			continue
		}
		old := fc.pairs[p.model]
		if old == nil && (p.ban != nil || p.cooldown != nil) ||
			old != nil && (old.ban != p.ban || old.cooldown != p.cooldown || old.probe != p.probe) {
			mark(p.cred, false, p.model)
		}
		fc.pairs[p.model] = p.frozen()
	}
	return reindex
}

// publishModels gives n fresh copies of the changed models and reports
// whether a bench changed.
func (s *State) publishModels(prev, n *Snapshot) bool {
	if len(s.dirtyModels) == 0 {
		return false
	}
	benchChanged := false
	n.models = maps.Clone(prev.models)
	for _, m := range s.dirtyModels {
		var oldBench *benchRec
		if old := prev.models[m.name]; old != nil {
			oldBench = old.bench
		}
		benchChanged = benchChanged || oldBench != m.bench
		n.models[m.name] = m.frozen()
	}
	return benchChanged
}

func (s *State) header() *Snapshot {
	return &Snapshot{pos: s.pos, lastAt: s.lastAt, skipped: s.skipped, settings: s.settings, policy: s.policy, claims: s.claims}
}

func (s *State) clearDirty() {
	for _, c := range s.dirtyCreds {
		c.dirty = false
	}
	for _, p := range s.dirtyPairs {
		p.dirty = false
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
// mutated, so they are shared.
func (p *pairRec) frozen() *pairRec {
	f := &pairRec{cred: p.cred, model: p.model, ban: p.ban, cooldown: p.cooldown, probe: p.probe, guards: p.guards}
	if len(p.counts) > 0 {
		f.counts = maps.Clone(p.counts)
	}
	return f
}

// frozen copies the model for a snapshot. The window is shared up to its
// current length: the state only appends past it or drops it whole.
func (m *modelRec) frozen() *modelRec {
	n := len(m.window)
	return &modelRec{name: m.name, window: m.window[:n:n], bench: m.bench}
}
