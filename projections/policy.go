package projections

import (
	"time"

	"github.com/airouter/airouter/domain"
)

// PolicyInForce is the latest policy.changed the fold has seen: the ban
// policy every replica decides under from its position on (the last change
// wins). It is never changed once folded; a later change replaces it.
type PolicyInForce struct {
	domain.PolicyChange
	// At, Seq and Index are when and where in the log it was announced.
	At    time.Time `json:"at"`
	Seq   uint64    `json:"seq"`
	Index uint32    `json:"index,omitempty"`
	// Ban is Policy as the domain value Decide reads; shared by every
	// reader, so never modified.
	Ban domain.BanPolicy `json:"-"`
}

// Policy returns the policy in force at the state's position, or nil when
// no policy.changed has been folded (each replica's own file then
// decides).
func (s *State) Policy() *PolicyInForce { return s.policy }

// Policy returns the policy in force at the snapshot's position, or nil
// when no policy.changed had been folded by then.
func (s *Snapshot) Policy() *PolicyInForce { return s.policy }

// applyPolicy folds a policy.changed: it becomes the policy in force.
func (s *State) applyPolicy(ev domain.Event) bool {
	p := &PolicyInForce{PolicyChange: *ev.Policy, At: ev.At.UTC(), Seq: ev.Seq, Index: ev.Index}
	p.Ban = p.Policy.BanPolicy()
	s.policy = p
	return true
}

// restorePolicy is a checkpoint's policy in force, with its domain value.
func restorePolicy(p *PolicyInForce) *PolicyInForce {
	if p == nil {
		return nil
	}
	p.Ban = p.Policy.BanPolicy()
	return p
}
