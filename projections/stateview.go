package projections

import (
	"slices"
	"time"

	"github.com/airouter/airouter/domain"
)

// StateView is everything the log determines, judged at one moment, as one
// JSON document: the golden files of the tests and the output of
// `replay -at`. Maps render with sorted keys and lists are sorted, so the
// same log and moment always give the same bytes. The rows it lists are
// the snapshot's queries (queries.go).
type StateView struct {
	Seq         uint64     `json:"seq"`
	Index       uint32     `json:"index,omitempty"`
	At          time.Time  `json:"at"`
	LastEventAt *time.Time `json:"last_event_at,omitempty"`
	// Bans are the bans active at At.
	Bans []BanView `json:"bans"`
	// Pairs are every pair the log named, with counters, the ban reported
	// for it and its cooldown at At.
	Pairs []PairView `json:"pairs"`
	// Benched are the models benched at At.
	Benched map[string]BenchView `json:"benched"`
	// ModelFailures are the non-empty bench windows, oldest first.
	ModelFailures map[string][]domain.ModelFailure `json:"model_failures"`
	// Settings are the runtime failover settings, null when never changed.
	Settings *domain.FallbackSettings `json:"settings"`
	// Policy is the ban policy in force (the latest policy.changed),
	// absent before one.
	Policy  *PolicyInForce `json:"policy,omitempty"`
	Skipped Skipped        `json:"skipped"`
}

// StateView renders the whole snapshot at now.
func (s *Snapshot) StateView(now time.Time) StateView {
	v := StateView{
		Seq:           s.pos.Seq,
		Index:         s.pos.Index,
		At:            now.UTC(),
		Bans:          s.Bans(now),
		Pairs:         []PairView{},
		Benched:       s.Benched(now),
		ModelFailures: map[string][]domain.ModelFailure{},
		Skipped:       s.skipped,
	}
	if !s.lastAt.IsZero() {
		last := s.lastAt
		v.LastEventAt = &last
	}
	for _, k := range s.Pairs() {
		v.Pairs = append(v.Pairs, s.Pair(k, now))
	}
	for m := range values(s.models) {
		if len(m.window) > 0 {
			v.ModelFailures[m.name] = slices.Clone(m.window)
		}
	}
	if set, ok := s.Settings(); ok {
		v.Settings = &set
	}
	v.Policy = s.policy
	return v
}
