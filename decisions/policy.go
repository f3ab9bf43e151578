package decisions

import (
	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
)

// ownPolicy is this replica's own ban policy (its file's) and its
// fingerprint.
type ownPolicy struct {
	ban         domain.BanPolicy
	fingerprint string
}

func newOwnPolicy(p domain.BanPolicy) *ownPolicy {
	return &ownPolicy{ban: p, fingerprint: domain.PolicyFingerprint(p)}
}

// SetPolicy replaces this replica's own policy (Config.Policy), as a
// reload of its file does. It decides only until a policy.changed is on
// the log; announcing it is the wiring's job. Safe from any goroutine.
func (e *Engine) SetPolicy(p domain.BanPolicy) { e.own.Store(newOwnPolicy(p)) }

// policyAt is the policy an outcome folded into s is decided under: the
// latest policy.changed at its position, or this replica's own policy on a
// log without one.
func (e *Engine) policyAt(s *projections.State) domain.BanPolicy {
	if p := s.Policy(); p != nil {
		return p.Ban
	}
	return e.own.Load().ban
}

// warnPolicy says, once per live policy.changed, when the policy now in
// force is not this replica's own (another replica started or reloaded
// with a different file): this replica decides under it all the same.
func (e *Engine) warnPolicy(ev domain.Event) {
	own := e.own.Load().fingerprint
	if ev.Policy.Fingerprint == own {
		return
	}
	e.logger.Warn("the ban policy in force differs from this replica's config file; deciding under the policy in force",
		"in_force", ev.Policy.Fingerprint, "file", own, "announced_by", ev.Policy.Replica)
}
