package projections

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// heldLog is a log over one credential of pairs models: a failed outcome
// on each, then automatic bans of an hour on the first banned of them
// (one of them lifted again by an admin), a cooldown on one more, and a
// wildcard ban of a second credential; the pairs the sweep and the prober
// have anything for stay few however many pairs there are.
func heldLog(pairs, banned int) []domain.Event {
	var evs []domain.Event
	for m := range pairs {
		evs = append(evs, outcome(0, "a", fmt.Sprintf("model-%05d", m), 500))
	}
	for m := range banned {
		model := fmt.Sprintf("model-%05d", m*(pairs/banned))
		evs = append(evs, autoBan(time.Second, "ban/"+model, "a", model, 500, time.Hour))
	}
	evs = append(evs, unban(2*time.Second, "a", "model-00000"),
		cooldown(3*time.Second, "a", fmt.Sprintf("model-%05d", pairs-1), 2*time.Hour),
		outcome(0, "b", "model-00000", 500), autoBan(4*time.Second, "ban/b", "b", domain.AllModels, 500, time.Hour))
	return numbered(evs...)
}

// The expiry sweep and the prober read only the pairs held back (the
// block index's), and find what a walk of every pair of the writer's
// state finds: every expired ban, wildcard included, and every due probe.
func TestSweepAndProbesReadTheHeldPairs(t *testing.T) {
	s := fold(heldLog(1000, 10))
	snap := s.Snapshot()
	for _, now := range []time.Time{at(30 * time.Minute), at(2 * time.Hour)} {
		got, want := snap.ExpiredBans(now), s.ExpiredBans(now)
		if len(want) == 0 && now.After(at(time.Hour+time.Minute)) {
			t.Fatalf("at %v the state finds no expired ban", now)
		}
		if !slices.EqualFunc(got, want, func(a, b domain.Event) bool { return a.ID == b.ID }) {
			t.Errorf("at %v the snapshot's sweep found %d expiries, the state's walk %d", now, len(got), len(want))
		}
		var walk []string
		for cred, c := range s.creds {
			for k := range c.pairs {
				if ev, ok := s.DueProbe(domain.Key{Credential: cred, Model: k}, now, recoveryPolicy, "r1"); ok {
					walk = append(walk, ev.ID)
				}
			}
		}
		var due []string
		for _, ev := range snap.DueProbes(now, recoveryPolicy, "r1") {
			if ev.Probe.Model != domain.AllModels {
				due = append(due, ev.ID)
			}
		}
		slices.Sort(walk)
		slices.Sort(due)
		if now.Before(at(time.Hour)) && len(walk) != 9 {
			t.Fatalf("at %v the state's walk finds %d due probes, want the 9 automatic bans'", now, len(walk))
		}
		if !slices.Equal(due, walk) {
			t.Errorf("at %v DueProbes found %v, a walk of every pair %v", now, due, walk)
		}
	}
}

// The sweep's and the prober's walk each second costs the pairs held
// back, not the pool: ten bans among 20,000 pairs take about what ten
// among 100 take (a walk of every pair took about 50 times as long).
func TestSweepCostDoesNotGrowWithThePool(t *testing.T) {
	if testing.Short() {
		t.Skip("folds 20,000 pairs")
	}
	cost := func(pairs int) time.Duration {
		snap := fold(heldLog(pairs, 10)).Snapshot()
		best := time.Duration(1 << 62)
		for range 5 {
			t0 := time.Now()
			for range 20 {
				_ = snap.ExpiredBans(at(30 * time.Minute))
				_ = snap.DueProbes(at(30*time.Second), recoveryPolicy, "r1")
			}
			best = min(best, time.Since(t0))
		}
		return best
	}
	small, large := cost(100), cost(20_000)
	t.Logf("sweep and probes, 20 rounds: %v at 100 pairs, %v at 20,000", small, large)
	if large > 20*small {
		t.Errorf("sweep and probes: %v at 20,000 pairs against %v at 100, want under 20 times", large, small)
	}
}

// The count of cooling pairs the metrics read from the block index is
// the count of pair views with a cooldown: a pair's own (not one that
// ended), and every pair of a credential under a cooldown of all models.
func TestCoolingPairsCountsThePairViews(t *testing.T) {
	evs := heldLog(100, 10)
	evs = append(evs, cooldown(4*time.Second, "a", "model-00001", 10*time.Second),
		outcome(0, "c", "m1", 500), outcome(0, "c", "m2", 500), cooldown(5*time.Second, "c", domain.AllModels, time.Hour),
		outcome(0, "d", "m1", 500), cooldown(5*time.Second, "d", "m1", time.Hour))
	snap := fold(numbered(evs...)).Snapshot()
	for _, now := range []time.Time{at(10 * time.Second), at(30 * time.Second), at(3 * time.Hour)} {
		want := 0
		for _, k := range snap.Pairs() {
			if snap.Pair(k, now).CooldownUntil != nil {
				want++
			}
		}
		if got := snap.CoolingPairs(now); got != want {
			t.Errorf("at %v CoolingPairs = %d, the pair views say %d", now, got, want)
		}
	}
	if got := snap.CoolingPairs(at(10 * time.Second)); got != 5 {
		t.Errorf("at 10s CoolingPairs = %d, want 5 (a's two, c's two by its credential's, d's one)", got)
	}
}
