package projections

import (
	"math"
	"time"

	"github.com/airouter/airouter/domain"
)

// windowSize bounds a model's window of bench-countable failures: the
// oldest entries fall out first. The policy judges the window by time; the
// bound only keeps memory flat.
const windowSize = 64

// Skipped counts the events the fold ignored, by why.
type Skipped struct {
	// UnknownKind: a kind this version does not understand.
	UnknownKind uint64 `json:"unknown_kind"`
	// NewerVersion: a known kind written with a newer schema version.
	NewerVersion uint64 `json:"newer_version"`
	// Invalid: a known kind whose payload is missing or unusable (no
	// credential, no model, an unknown way of lifting a ban).
	Invalid uint64 `json:"invalid"`
}

// State is everything the log determines, as the writer folds it. Apply
// owns it: it is mutated in place for replay speed, so a State being applied
// is never shared; readers use a Snapshot. Apply is still a deterministic
// function of the state and the event.
type State struct {
	creds    map[string]*credRec
	models   map[string]*modelRec
	settings *domain.FallbackSettings
	// policy is the latest policy.changed (policy.go); nil before one.
	policy  *PolicyInForce
	pos     domain.Pos
	lastAt  time.Time
	skipped Skipped
	// pairsOf indexes the pair records by model and credential, for the
	// ejection cap's count of a model's pairs (modelBans); derived from
	// creds, kept by indexPair and unindexPair.
	pairsOf map[string]map[*credRec]*pairRec
	// caps holds, by model, the pair records banned by their own or
	// their credential's wildcard ban, for modelBans (capcount.go);
	// derived from creds, kept by recap.
	caps map[string]*modelCap
	// claims counts the probe claims folded and kept (ClaimsFolded);
	// not part of what a checkpoint keeps.
	claims uint64
	// forgotten counts the pair records the fold forgot while they held
	// failure counts (prune.go); a checkpoint keeps it.
	forgotten uint64
	// dropped lists the pairs the event being folded dropped, handed to
	// its Change at the end of the step (prune.go). Not part of what the
	// log determines.
	dropped []PairDrop

	// Records changed since the last incremental publish (see publish).
	// Not part of what the log determines.
	dirtyCreds  []*credRec
	dirtyPairs  []*pairRec
	dirtyModels []*modelRec
	// stale lists the records used, and not otherwise changed, since
	// their copy in the latest snapshot (and some no longer stale): their
	// last use goes to a checkpoint beside the snapshot (CheckpointOf).
	// Not part of what the log determines.
	stale     []*pairRec
	staleKept int
	// mark names the state (made at the first clearing of the dirty
	// marks) and clears counts those clearings: a snapshot holding both as
	// they are now has every change but the dirty records (SnapshotAfter).
	mark   *publishMark
	clears uint64
}

// credRec is one credential: its wildcard ban, its cooldown of every
// model (an auth cooldown) and its pairs.
type credRec struct {
	name     string
	wild     *banRec
	cooldown *cooldownRec
	// probe is the latest recovery probe claim of the auth cooldown
	// (authprobe.go); it counts only while its cooldown is the current one.
	probe *probeRec
	pairs map[string]*pairRec
	dirty bool
}

// pairRec is one credential+model pair.
type pairRec struct {
	cred, model string
	// counts are failures per status code since the last reset; streak
	// is the log position of the first of them (0 when none). A
	// snapshot's copy holds them in frozenCounts instead (counts nil).
	counts       map[int]int
	frozenCounts []codeCount
	streak       domain.Pos
	ban          *banRec
	cooldown     *cooldownRec
	// guards holds the pair's Fail2Ban guards (guards.go); nil while it
	// has none.
	guards *pairGuards
	// probe is the latest recovery probe claim (probe.go); it counts
	// only while its ban is the pair's ban.
	probe *probeRec
	// last is the log position of the last event folded on the record
	// (used, prune.go); a checkpoint keeps it.
	last  domain.Pos
	dirty bool
	// stale marks a record whose last use is newer than its copy in the
	// latest snapshot (listed in State.stale; checkpoint_source.go).
	stale bool
	// gone marks a record the fold dropped (prune.go).
	gone bool
}

// modelRec is one model's bench and its window of bench-countable failures.
type modelRec struct {
	name string
	// window only grows at its end or is dropped whole, so a Snapshot can
	// share a prefix of it (see appendFailure).
	window []domain.ModelFailure
	bench  *benchRec
	dirty  bool
	// gone marks a record the fold dropped with its model's last pair
	// (prune.go).
	gone bool
}

// banRec, cooldownRec and benchRec are replaced, never mutated, so states
// and snapshots share them. The int64 fields are the ends in Unix
// nanoseconds for the hot path.
type banRec struct {
	id    string
	ban   domain.Ban
	perm  bool
	until int64
}

type cooldownRec struct {
	cd    domain.Cooldown
	until int64
}

type benchRec struct {
	bench domain.Bench
	until int64
}

// NewState returns the state before any event.
func NewState() *State {
	return &State{creds: map[string]*credRec{}, models: map[string]*modelRec{}, pairsOf: map[string]map[*credRec]*pairRec{}}
}

// Seq is the stream sequence of the last event applied (0 before any).
func (s *State) Seq() uint64 { return s.pos.Seq }

// Pos is the log position of the last event applied (zero before any).
func (s *State) Pos() domain.Pos { return s.pos }

// LastEventAt is the time of the last event applied, zero before any.
func (s *State) LastEventAt() time.Time { return s.lastAt }

// Skipped counts the events the fold ignored.
func (s *State) Skipped() Skipped { return s.skipped }

func (s *State) cred(name string) *credRec {
	c := s.creds[name]
	if c == nil {
		c = &credRec{name: name, pairs: map[string]*pairRec{}}
		s.creds[name] = c
		s.touchCred(c)
	}
	return c
}

// pair is c's record of model for the event being folded, made when
// there is none (making one first keeps c within maxPairs, makeRoom,
// prune.go); the event is the record's last use.
func (s *State) pair(c *credRec, model string) *pairRec {
	p := c.pairs[model]
	if p == nil {
		s.makeRoom(c)
		p = s.newPair(c, model)
	}
	s.used(p)
	return p
}

// newPair adds a record of model to c.
func (s *State) newPair(c *credRec, model string) *pairRec {
	p := &pairRec{cred: c.name, model: model}
	c.pairs[model] = p
	s.indexPair(c, p)
	s.touchPair(p)
	return p
}

func (s *State) model(name string) *modelRec {
	m := s.models[name]
	if m == nil {
		m = &modelRec{name: name}
		s.models[name] = m
		s.touchModel(m)
	}
	return m
}

func (s *State) touchCred(c *credRec) {
	if !c.dirty {
		c.dirty = true
		s.dirtyCreds = append(s.dirtyCreds, c)
	}
}

func (s *State) touchPair(p *pairRec) {
	if !p.dirty {
		p.dirty = true
		s.dirtyPairs = append(s.dirtyPairs, p)
	}
}

func (s *State) touchModel(m *modelRec) {
	if !m.dirty {
		m.dirty = true
		s.dirtyModels = append(s.dirtyModels, m)
	}
}

// resetCounts forgets a pair's failures; its next failure starts a new
// streak.
func (s *State) resetCounts(p *pairRec) {
	if len(p.counts) > 0 {
		s.touchPair(p)
		clear(p.counts)
	}
	p.streak = domain.Pos{}
	s.forgetWithheld(p)
}

func (s *State) resetAllCounts(c *credRec) {
	for _, p := range c.pairs {
		s.resetCounts(p)
	}
}

// count adds a failure with code at log position at; the first failure
// after a reset starts the pair's streak.
func (s *State) count(p *pairRec, code int, at domain.Pos) {
	if p.counts == nil {
		p.counts = map[int]int{}
	}
	if len(p.counts) == 0 {
		p.streak = at
	}
	p.counts[code]++
	s.touchPair(p)
}

// appendFailure adds f to the model's window, dropping the oldest beyond
// windowSize. It never writes over an element already in the window, so a
// snapshot holding w[:n:n] keeps seeing the same failures.
func (s *State) appendFailure(m *modelRec, f domain.ModelFailure) {
	if len(m.window) >= windowSize {
		m.window = m.window[len(m.window)-windowSize+1:]
	}
	m.window = append(m.window, f)
	s.touchModel(m)
}

func (s *State) clearWindow(name string) {
	if m := s.models[name]; m != nil && len(m.window) > 0 {
		m.window = nil
		s.touchModel(m)
	}
}

// activeAt reports whether the ban applies at t (Unix nanoseconds).
func (b *banRec) activeAt(t int64) bool { return b != nil && (b.perm || t < b.until) }

func newBanRec(id string, b domain.Ban) *banRec {
	b.Since = b.Since.UTC()
	if b.Until != nil {
		u := b.Until.UTC()
		b.Until = &u
	}
	r := &banRec{id: id, ban: b, perm: b.Permanent || b.Until == nil}
	if !r.perm {
		r.until = nanos(*b.Until)
	}
	return r
}

func newCooldownRec(c domain.Cooldown) *cooldownRec {
	c.Until = c.Until.UTC()
	return &cooldownRec{cd: c, until: nanos(c.Until)}
}

func newBenchRec(b domain.Bench) *benchRec {
	b.Until = b.Until.UTC()
	if b.Credentials != nil {
		b.Credentials = append([]string{}, b.Credentials...)
	}
	return &benchRec{bench: b, until: nanos(b.Until)}
}

// The range of times that Unix nanoseconds can hold; beyond it nanos
// clamps, so a ban for a thousand years stays a long ban.
const (
	minSec = math.MinInt64/int64(time.Second) + 1
	maxSec = math.MaxInt64/int64(time.Second) - 1
)

// nanos is t in Unix nanoseconds, clamped to the int64 range.
func nanos(t time.Time) int64 {
	switch sec := t.Unix(); {
	case sec < minSec:
		return math.MinInt64
	case sec > maxSec:
		return math.MaxInt64
	default:
		return sec*int64(time.Second) + int64(t.Nanosecond())
	}
}

// fromNanos is the UTC time of n Unix nanoseconds.
func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }
