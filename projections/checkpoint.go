package projections

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/airouter/airouter/domain"
)

// CheckpointVersion is the version of the checkpoint format. A checkpoint
// of another version is refused; the caller then replays the whole log.
// Version 3 holds a pair's failure streak (streak_seq) and positions inside
// a batch message (index, streak_index). An older checkpoint is refused even
// where it would parse: a router writing one could not read outcome
// batches, so its state may lack outcomes another replica had batched.
const CheckpointVersion = 3

// ErrCheckpointVersion is returned (wrapped) for a checkpoint written in
// another format version.
var ErrCheckpointVersion = errors.New("checkpoint format version mismatch")

// checkpointDoc is the checkpoint as JSON. Lists are sorted and maps render
// with sorted keys, so a state always gives the same bytes.
type checkpointDoc struct {
	Version     int                      `json:"version"`
	Seq         uint64                   `json:"seq"`
	Index       uint32                   `json:"index,omitempty"`
	LastEventAt time.Time                `json:"last_event_at"`
	Skipped     Skipped                  `json:"skipped"`
	Settings    *domain.FallbackSettings `json:"settings,omitempty"`
	// PairsForgotten counts the pair records forgotten while they held
	// failure counts (State.PairsForgotten); absent while none was.
	PairsForgotten uint64 `json:"pairs_forgotten,omitempty"`
	// Policy is the policy in force (the latest policy.changed).
	Policy      *PolicyInForce    `json:"policy,omitempty"`
	Credentials []checkpointCred  `json:"credentials"`
	Models      []checkpointModel `json:"models"`
}

type checkpointCred struct {
	Name     string         `json:"name"`
	Wildcard *checkpointBan `json:"wildcard,omitempty"`
	// Cooldown is the credential's cooldown of every model.
	Cooldown *domain.Cooldown `json:"cooldown,omitempty"`
	// Probe is the auth cooldown's open recovery probe claim.
	Probe *checkpointProbe `json:"probe,omitempty"`
	Pairs []checkpointPair `json:"pairs"`
}

type checkpointPair struct {
	Model    string      `json:"model"`
	Counts   countObject `json:"counts,omitzero"`
	Streak   uint64      `json:"streak_seq,omitempty"`
	StreakIx uint32      `json:"streak_index,omitempty"`
	// Last and LastIx are the log position of the last event folded on
	// the record (the order records holding nothing are dropped in at the
	// bound, prune.go); a record without them counts as used before any
	// other.
	Last     uint64            `json:"last_seq,omitempty"`
	LastIx   uint32            `json:"last_index,omitempty"`
	Ban      *checkpointBan    `json:"ban,omitempty"`
	Cooldown *domain.Cooldown  `json:"cooldown,omitempty"`
	Probe    *checkpointProbe  `json:"probe,omitempty"`
	Guards   *checkpointGuards `json:"guards,omitempty"`
}

type checkpointBan struct {
	ID  string     `json:"id"`
	Ban domain.Ban `json:"ban"`
}

type checkpointModel struct {
	Name   string                `json:"name"`
	Bench  *domain.Bench         `json:"bench,omitempty"`
	Window []domain.ModelFailure `json:"window,omitempty"`
}

// MarshalCheckpoint renders the state as versioned, deterministic bytes.
// Call it on the writer goroutine (or on a state nobody applies to); a
// published Snapshot gives the same bytes from any goroutine
// (checkpoint_source.go).
func (s *State) MarshalCheckpoint() ([]byte, error) {
	return marshalCheckpoint(s.header(), len(s.creds), s.stateCheckpointCreds, len(s.models), sortedValues(s.models))
}

func checkpointBanOf(b *banRec) *checkpointBan {
	if b == nil {
		return nil
	}
	return &checkpointBan{ID: b.id, Ban: b.ban}
}

// UnmarshalCheckpoint rebuilds a state from MarshalCheckpoint's bytes. A
// checkpoint of another version returns an error wrapping
// ErrCheckpointVersion; a damaged one returns an error too. Either way the
// caller replays the log from the start.
func UnmarshalCheckpoint(data []byte) (*State, error) {
	var head struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("read projection checkpoint: %w", err)
	}
	if head.Version != CheckpointVersion {
		return nil, fmt.Errorf("read projection checkpoint: version %d, want %d: %w",
			head.Version, CheckpointVersion, ErrCheckpointVersion)
	}
	var doc checkpointDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("read projection checkpoint: %w", err)
	}
	s := NewState()
	s.pos = domain.Pos{Seq: doc.Seq, Index: doc.Index}
	s.lastAt, s.skipped, s.settings = doc.LastEventAt.UTC(), doc.Skipped, doc.Settings
	s.forgotten = doc.PairsForgotten
	s.policy = restorePolicy(doc.Policy)
	for _, cc := range doc.Credentials {
		if err := s.restoreCred(cc); err != nil {
			return nil, fmt.Errorf("read projection checkpoint: %w", err)
		}
	}
	for _, cm := range doc.Models {
		if cm.Name == "" || s.models[cm.Name] != nil {
			return nil, fmt.Errorf("read projection checkpoint: model %q is empty or repeated", cm.Name)
		}
		m := s.model(cm.Name)
		for _, f := range cm.Window {
			f.At = f.At.UTC()
			s.appendFailure(m, f)
		}
		if cm.Bench != nil {
			m.bench = newBenchRec(*cm.Bench)
		}
	}
	s.clearDirty()
	return s, nil
}

func (s *State) restoreCred(cc checkpointCred) error {
	if cc.Name == "" || s.creds[cc.Name] != nil {
		return fmt.Errorf("credential %q is empty or repeated", cc.Name)
	}
	c := s.cred(cc.Name)
	if cc.Wildcard != nil {
		c.wild = newBanRec(cc.Wildcard.ID, cc.Wildcard.Ban)
	}
	if cc.Cooldown != nil {
		c.cooldown = newCooldownRec(*cc.Cooldown)
	}
	c.probe = cc.Probe.rec()
	for _, cp := range cc.Pairs {
		if cp.Model == "" || c.pairs[cp.Model] != nil {
			return fmt.Errorf("pair %q/%q is empty or repeated", cc.Name, cp.Model)
		}
		p := s.newPair(c, cp.Model)
		p.last = domain.Pos{Seq: cp.Last, Index: cp.LastIx}
		if len(cp.Counts.byCode) > 0 {
			p.counts, p.streak = cp.Counts.byCode, domain.Pos{Seq: cp.Streak, Index: cp.StreakIx}
		}
		if cp.Ban != nil {
			p.ban = newBanRec(cp.Ban.ID, cp.Ban.Ban)
			s.recap(c, p)
		}
		if cp.Cooldown != nil {
			p.cooldown = newCooldownRec(*cp.Cooldown)
		}
		p.probe = cp.Probe.rec()
		p.guards = cp.Guards.rec()
	}
	return nil
}
