package projections

import (
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// testPolicy is a ban policy whose default rule bans after maxAttempts.
func testPolicy(maxAttempts int) domain.BanPolicy {
	return domain.BanPolicy{
		Default:  domain.Rule{MaxAttempts: maxAttempts, Duration: 5 * time.Minute},
		Codes:    []int{429, 500},
		Rules:    map[int]domain.Rule{429: {MaxAttempts: maxAttempts + 1, Duration: time.Minute}},
		Recovery: domain.RecoveryPolicy{ProbeAfter: time.Minute, ProbeMax: 30 * time.Minute},
	}
}

// policyChanged announces testPolicy(maxAttempts) at t0+d.
func policyChanged(d time.Duration, maxAttempts int) domain.Event {
	c := domain.NewPolicyChange(testPolicy(maxAttempts), "r1")
	return domain.Event{V: domain.SchemaVersion, Kind: domain.KindPolicyChanged, ID: "policy/" + c.Fingerprint, At: at(d), Policy: &c}
}

func TestApplyPolicyChanged(t *testing.T) {
	three, five := policyChanged(0, 3), policyChanged(m, 5)
	cases := []struct {
		name string
		evs  []domain.Event
		// want is the max_attempts in force; 0 for none.
		want int
		fp   string
	}{
		{"no policy on the log", numbered(outcome(0, "a", "gpt", 500)), 0, ""},
		{"one change is in force", numbered(three, outcome(m, "a", "gpt", 500)), 3, three.Policy.Fingerprint},
		{"the last change wins", numbered(three, outcome(m, "a", "gpt", 500), five), 5, five.Policy.Fingerprint},
		{"changing back", numbered(three, five, policyChanged(2*m, 3)), 3, three.Policy.Fingerprint},
		{"a change without a fingerprint is skipped", numbered(three,
			domain.Event{V: domain.SchemaVersion, Kind: domain.KindPolicyChanged, At: at(m), Policy: &domain.PolicyChange{}}), 3, three.Policy.Fingerprint},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := fold(c.evs)
			in := s.Snapshot().Policy()
			if c.want == 0 {
				if in != nil {
					t.Fatalf("policy in force %+v, want none", in)
				}
				return
			}
			if in == nil {
				t.Fatal("no policy in force")
			}
			if in.Ban.Default.MaxAttempts != c.want || in.Fingerprint != c.fp || in.Ban.Recovery.ProbeAfter != time.Minute {
				t.Fatalf("in force: max_attempts %d, fingerprint %s, recovery %+v; want %d, %s", in.Ban.Default.MaxAttempts,
					in.Fingerprint, in.Ban.Recovery, c.want, c.fp)
			}
			if s.Policy() != in {
				t.Fatal("the state and its snapshot disagree on the policy in force")
			}
		})
	}
}

func TestCheckpointKeepsThePolicyInForce(t *testing.T) {
	s := fold(numbered(policyChanged(0, 3), outcome(m, "a", "gpt", 500), policyChanged(2*m, 5)))
	data, err := s.MarshalCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	back, err := UnmarshalCheckpoint(data)
	if err != nil {
		t.Fatal(err)
	}
	in := back.Policy()
	if in == nil || in.Fingerprint != s.Policy().Fingerprint || in.Seq != 3 || !in.At.Equal(at(2*m)) {
		t.Fatalf("restored policy %+v, want %s at seq 3", in, s.Policy().Fingerprint)
	}
	if in.Ban.Default.MaxAttempts != 5 || in.Ban.Rules[429].MaxAttempts != 6 {
		t.Fatalf("restored policy decides with %+v", in.Ban)
	}
	again, err := back.MarshalCheckpoint()
	if err != nil || string(again) != string(data) {
		t.Fatalf("checkpoint of the restored state differs (%v):\n%s\n%s", err, data, again)
	}
}
