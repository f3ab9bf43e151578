package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/airouter/airouter/domain"
)

// ownPolicy is this replica's own ban policy (its config file's) and its
// fingerprint.
type ownPolicy struct {
	ban         domain.BanPolicy
	fingerprint string
}

// setOwnPolicy makes p this replica's own policy: the one it decides under
// until a policy.changed is on the log, and the one /health compares with
// the policy in force.
func (rt *router) setOwnPolicy(p domain.BanPolicy) *ownPolicy {
	own := &ownPolicy{ban: p, fingerprint: domain.PolicyFingerprint(p)}
	rt.own.Store(own)
	if rt.engine != nil {
		rt.engine.SetPolicy(p)
	}
	return own
}

// announcePolicy publishes p, this replica's ban policy (from its file, at
// start or on reload), as policy.changed when it differs from the policy in
// force: the latest policy.changed folded into the projections, or, on a
// log without one, nothing (so the first router on a log always announces
// its policy). Every replica decides under the policy in force, so the
// last announcement wins cluster-wide. p also becomes this replica's own
// policy (setOwnPolicy). It returns once this replica has folded the
// event; on an error the policy in force stays as it was.
func (rt *router) announcePolicy(ctx context.Context, p domain.BanPolicy) error {
	own := rt.setOwnPolicy(p)
	if in := rt.live.Load().Policy(); in != nil && in.Fingerprint == own.fingerprint {
		return nil
	}
	change := domain.NewPolicyChange(p, rt.replica)
	now := rt.clock.Now().UTC()
	ev := domain.Event{
		V: domain.SchemaVersion, Kind: domain.KindPolicyChanged, At: now, Policy: &change,
		// Unique per announcement: announcing a policy again after another
		// replica's must not be taken for a duplicate of the first.
		ID: "policy/" + own.fingerprint + "/" + rt.replica + "/" + strconv.FormatInt(now.UnixNano(), 36),
	}
	seq, err := rt.log.PublishControl(ctx, ev)
	if err != nil {
		return fmt.Errorf("announce the ban policy %s: %w", own.fingerprint, err)
	}
	if err := rt.live.WaitFor(ctx, seq); err != nil {
		return fmt.Errorf("fold the announced ban policy %s: %w", own.fingerprint, err)
	}
	rt.logger.Info("ban policy announced; the cluster decides under it", "fingerprint", own.fingerprint, "seq", seq)
	return nil
}

// policy is the ban policy in force now: the latest policy.changed this
// replica has folded, else its own.
func (rt *router) policy() domain.BanPolicy {
	if in := rt.live.Load().Policy(); in != nil {
		return in.Ban
	}
	return rt.own.Load().ban
}

// watched reports whether Fail2Ban counts status for the credential under
// the policy in force (the proxy's failover and /health's counters).
func (rt *router) watched(credential string, status int) bool {
	return rt.policy().Watched(credential, status)
}

// ownFingerprint is the fingerprint of this replica's own policy, for
// /health.
func (rt *router) ownFingerprint() string { return rt.own.Load().fingerprint }
