package proxy

import (
	"slices"
	"sync"
	"testing"

	"github.com/airouter/airouter/domain"
)

// A claim of this process lets exactly one request through to its banned
// pair, before the other candidates, however many pick at once; a claim of
// another replica lets none through.
func TestProbeGoesFirstOncePerClaim(t *testing.T) {
	_, pl := testPool(t, "a:1", "b:1")
	pl.probes = newProbes("r1")
	claim := &domain.ProbeClaim{Credential: "a", Model: "m", BanID: "f2b/a/m/1", Interval: 0, Replica: "r1"}
	gate := mapGate{{Credential: "a", Model: "m"}: {Reason: domain.BlockBanned, Permanent: true, Probe: claim}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	picks := map[int]int{}
	probes := 0
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			i, probe := pl.pickProbe(gate, testNow, newIdxSet(len(pl.cands)), epChat, nil)
			mu.Lock()
			defer mu.Unlock()
			picks[i]++
			if probe {
				probes++
				if i != 0 {
					t.Errorf("the probe went to candidate %d", i)
				}
			}
		}()
	}
	wg.Wait()
	if probes != 1 || picks[0] != 1 || picks[1] != 49 {
		t.Fatalf("probes %d, picks %v: want one probe to a, the rest to b", probes, picks)
	}
	var sum int64
	for i := range pl.cands {
		sum += pl.cands[i].current.Load()
	}
	if sum != 0 {
		t.Fatalf("the round-robin counters sum to %d, want 0", sum)
	}
	other := *claim
	other.Replica, other.Interval = "r2", 1
	gate[domain.Key{Credential: "a", Model: "m"}] = domain.Block{Reason: domain.BlockBanned, Permanent: true, Probe: &other}
	if i, probe := pl.pickProbe(gate, testNow, newIdxSet(len(pl.cands)), epChat, nil); probe || i != 1 {
		t.Fatalf("another replica's claim: pick %d probe %v", i, probe)
	}
}

// Panic routing tries what automatic bans, cooldowns and benches hold
// back, least recently failed first, and never a manual ban or a
// candidate at its rate limit.
func TestPanicCandidatesLeastRecentlyFailedFirst(t *testing.T) {
	p, pl := testPool(t, "a:1", "b:1", "c:1", "d:1", "e:1")
	key := func(c string) domain.Key { return domain.Key{Credential: c, Model: "m"} }
	gate := mapGate{
		key("a"): {Reason: domain.BlockBanned, Permanent: true, Manual: true},
		key("b"): {Reason: domain.BlockBanned, Permanent: true},
		key("c"): {Reason: domain.BlockCoolingDown, Until: testNow.Add(60e9)},
		key("d"): {Reason: domain.BlockBenched, Until: testNow.Add(60e9)},
		key("e"): {Reason: domain.BlockBanned, Permanent: true},
	}
	pl.cands[1].lastFail.Store(300)
	pl.cands[2].lastFail.Store(100)
	pl.cands[3].lastFail.Store(200)
	e := &pl.cands[4]
	e.pair = newLimits(1, 0, &usage{})
	e.reserve(testNow.Unix())
	rq := &request{ep: epChat, skip: newIdxSet(len(pl.cands))}
	got := pl.panicCandidates(gate, rq, testNow.Unix(), p)
	if want := []int{2, 3, 1}; !slices.Equal(got, want) {
		t.Fatalf("panic candidates = %v, want %v (c, d, b)", got, want)
	}
	if got := pl.panicCandidates(nil, rq, testNow.Unix(), p); got != nil {
		t.Fatalf("without a gate: %v", got)
	}
}
