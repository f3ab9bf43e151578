package whatif

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// diffByScan is the pairing diff is held to: every ban a candidate for
// every other.
func diffByScan(actual, proposed []*Ban) Diff {
	all := make([]int, len(proposed))
	for i := range all {
		all[i] = i
	}
	return pairUp(actual, proposed, func(*Ban) []int { return all })
}

// TestDiffPairsBansAsAFullScanDoes compares diff, which compares a ban
// only with the proposed bans on its key, with the full scan over random
// runs: a few keys, bans that repeat, overlap, differ in their end or
// reason, or are permanent.
func TestDiffPairsBansAsAFullScanDoes(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 7))
	ban := func() *Ban {
		since := t0.Add(time.Duration(rng.IntN(20)) * time.Minute)
		b := &Ban{Credential: fmt.Sprintf("c%d", rng.IntN(3)), Model: fmt.Sprintf("m%d", rng.IntN(2)),
			Origin: "fail2ban", ErrorCode: 500, Reason: "5 failures", Since: since}
		if rng.IntN(4) == 0 {
			b.Reason = "3 failures"
		}
		if rng.IntN(6) == 0 {
			b.Permanent = true
		} else {
			u := since.Add(time.Duration(1+rng.IntN(10)) * time.Minute)
			b.Until = &u
		}
		return b
	}
	for run := range 2000 {
		var actual, proposed []*Ban
		for range rng.IntN(12) {
			actual = append(actual, ban())
		}
		for range rng.IntN(12) {
			if len(actual) > 0 && rng.IntN(2) == 0 {
				c := *actual[rng.IntN(len(actual))]
				proposed = append(proposed, &c)
				continue
			}
			proposed = append(proposed, ban())
		}
		if got, want := diff(actual, proposed), diffByScan(actual, proposed); !reflect.DeepEqual(got, want) {
			t.Fatalf("run %d: diff paired\n%+v\nthe full scan\n%+v", run, got, want)
		}
	}
}
