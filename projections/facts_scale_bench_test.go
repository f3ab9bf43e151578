package projections

import (
	"fmt"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// capPool folds n credentials serving model "m", each with a pair record,
// a tenth of them banned: every tenth credential, its pair for an hour
// and more (the ends a second apart), every twentieth its credential
// whole instead. Credential "k0000001" is failing (one 500, no ban).
func capPool(n int) *State {
	s := NewState()
	var seq uint64
	add := func(ev domain.Event) {
		seq++
		ev.Seq = seq
		s = Apply(s, ev)
	}
	for i := range n {
		add(outcome(0, capCred(i), "m", 200))
	}
	for i := 0; i < n; i += 10 {
		dur := time.Hour + time.Duration(i)*time.Second
		if i%20 == 0 {
			add(adminBan(time.Second, fmt.Sprintf("wild/%d", i), capCred(i), domain.AllModels, "whole", dur))
		} else {
			add(autoBan(time.Second, fmt.Sprintf("ban/%d", i), capCred(i), "m", 500, dur))
		}
	}
	add(outcome(2*time.Second, capCred(1), "m", 500))
	return s
}

func capCred(i int) string { return fmt.Sprintf("k%07d", i) }

var capPoolSizes = []int{10, 1000, 20000}

// BenchmarkFactsOfAFailingPair is State.Facts for an outcome on a failing
// pair, which counts the model's banned pairs for the ejection cap:
// "steady" at times a millisecond apart that cross no ban's end, "crossing"
// at times on either side of a ban's end in turn.
func BenchmarkFactsOfAFailingPair(b *testing.B) {
	for _, n := range capPoolSizes {
		s := capPool(n)
		ev := outcome(3*time.Second, capCred(1), "m", 500)
		b.Run(fmt.Sprintf("creds=%d/steady", n), func(b *testing.B) {
			b.ReportAllocs()
			var i time.Duration
			for b.Loop() {
				i++
				ev.At = at(3*time.Second + i%3_600_000*time.Millisecond)
				if f := s.Facts(ev); f.ModelPairs != n {
					b.Fatalf("facts = %+v", f)
				}
			}
		})
		end := time.Second + time.Hour // the first ban's end
		b.Run(fmt.Sprintf("creds=%d/crossing", n), func(b *testing.B) {
			b.ReportAllocs()
			var i int
			for b.Loop() {
				i++
				ev.At = at(end - time.Millisecond + time.Duration(i%2)*2*time.Millisecond)
				if f := s.Facts(ev); f.ModelPairs != n {
					b.Fatalf("facts = %+v", f)
				}
			}
		})
	}
}

// BenchmarkCappedBanOfAFailingPair is ApplyReport of an automatic ban on
// the failing pair that the ejection cap (10%) refuses: capRefuses counts
// the model's banned pairs.
func BenchmarkCappedBanOfAFailingPair(b *testing.B) {
	for _, n := range capPoolSizes {
		s := capPool(n)
		ev := autoBan(3*time.Second, "capped", capCred(1), "m", 500, time.Minute)
		ev.Ban.Cap = 10
		b.Run(fmt.Sprintf("creds=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var ch Change
				s, ch = ApplyReport(s, ev)
				if len(ch.Bans) != 0 {
					b.Fatalf("the cap let ban through: %+v", ch.Bans)
				}
			}
		})
	}
}
