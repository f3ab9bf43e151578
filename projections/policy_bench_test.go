package projections

import (
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// BenchmarkOutcomeThroughPolicy is the writer's cost for one live outcome:
// fold it, read its Facts and run the policy on them. The log is the
// realistic mix of successes, 429s, 5xx and timeouts over 100 credentials x
// 50 models.
//
//	go test ./projections -run XXX -bench OutcomeThroughPolicy -benchmem
//
// The Facts of a failure count the model's pairs and bans (a walk over the
// model's pair records), which only a policy with an ejection cap (the
// Capped case) reads.
func BenchmarkOutcomeThroughPolicy(b *testing.B) {
	policy := domain.BanPolicy{
		Default: domain.Rule{MaxAttempts: 3, Permanent: true},
		Codes:   []int{401, 403, 429, 500, 502, 503, 504},
		Rules:   map[int]domain.Rule{429: {MaxAttempts: 5, Duration: 5 * time.Minute}},
		Bench:   domain.BenchPolicy{Failures: 3, Window: 15 * time.Minute, Duration: 10 * time.Minute},
	}
	b.Run("Uncapped", func(b *testing.B) { benchOutcomeThroughPolicy(b, policy) })
	policy.MaxEjectionPercent = 50
	b.Run("Capped", func(b *testing.B) { benchOutcomeThroughPolicy(b, policy) })
}

func benchOutcomeThroughPolicy(b *testing.B, policy domain.BanPolicy) {
	evs := realisticLog(200_000)
	s := NewState()
	decisions := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ev := evs[i%len(evs)]
		ev.Seq = uint64(i + 1)
		s = Apply(s, ev)
		if ev.Kind == domain.KindOutcomeRecorded {
			decisions += len(domain.Decide(policy, ev, s.Facts(ev)))
		}
	}
	b.ReportMetric(float64(decisions)/float64(b.N), "decisions/op")
}
