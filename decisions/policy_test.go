package decisions

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

// announced is a policy.changed of p by replica r2 at t0.
func announced(p domain.BanPolicy) domain.Event {
	c := domain.NewPolicyChange(p, "r2")
	return domain.Event{V: domain.SchemaVersion, Kind: domain.KindPolicyChanged, ID: "policy/" + c.Fingerprint, At: t0, Policy: &c}
}

// An engine whose own policy bans at three failures decides under the
// policy in force on the log, which bans at five, and warns that its own
// differs.
func TestTheEngineDecidesUnderThePolicyInForce(t *testing.T) {
	var logs testkit.Buffer
	r := newRig(t, func(c *Config) { c.Logger = logTo(&logs) })
	five := threeStrikes()
	five.Default.MaxAttempts = 5
	r.apply(announced(five))
	if lines := logs.Lines("differs from this replica's config file"); len(lines) != 1 || !strings.Contains(lines[0], "[WARN]") {
		t.Fatalf("warnings = %q, want one WARN", lines)
	}
	for i := range 4 {
		r.apply(failure(time.Duration(i)*time.Second, "cred-a", "gpt-test"))
	}
	if n := r.engine.Queued(); n != 0 {
		t.Fatalf("%d decisions after 4 failures under max_attempts 5", n)
	}
	r.apply(failure(5*time.Second, "cred-a", "gpt-test"))
	r.engine.Start(context.Background())
	ev := r.log.next(t)
	if ev.Kind != domain.KindBanImposed || ev.Ban.Failures != 5 {
		t.Fatalf("decided %s %+v, want the ban at 5 failures", ev.Kind, ev.Ban)
	}
	r.engine.SetPolicy(five)
	r.apply(announced(five))
	if lines := logs.Lines("differs from this replica's config file"); len(lines) != 1 {
		t.Fatalf("warned again once its own policy was the one in force: %q", lines)
	}
}

// A prober whose own policy has probes off claims them once the policy in
// force on the log turns them on.
func TestProberFollowsThePolicyInForce(t *testing.T) {
	r := newRig(t, nil)
	withProbes := threeStrikes()
	withProbes.Recovery = domain.RecoveryPolicy{ProbeAfter: time.Minute, ProbeMax: 10 * time.Minute}
	r.apply(announced(withProbes))
	for i := range 3 {
		r.apply(failure(time.Duration(i)*time.Second, "cred-a", "gpt-test"))
	}
	r.engine.Start(context.Background())
	imposed := r.log.next(t)
	r.applyAt(imposed.Seq, imposed)
	p, err := NewProber(ProberConfig{Log: r.log, Snapshot: r.live.Load, Clock: r.clock, Replica: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	p.Start(context.Background())
	t.Cleanup(func() { p.Stop(); p.Wait() })
	r.clock.Advance(time.Minute)
	r.clock.Advance(2 * time.Second)
	claim := r.log.next(t)
	if claim.Kind != domain.KindProbeClaimed || claim.ID != domain.ProbeClaimID(imposed.ID, 0) {
		t.Fatalf("published %s %q, want the first probe's claim", claim.Kind, claim.ID)
	}
}
