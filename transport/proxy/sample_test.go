package proxy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
)

// largePool builds a pool for model "m" of n primaries c0000... with
// weights 1 to 4 in turn, then fallbacks fb000... of weight 1.
func largePool(t testing.TB, n, fallbacks int) (*Proxy, *pool) {
	t.Helper()
	specs := make([]string, 0, n+fallbacks)
	for i := range n {
		specs = append(specs, fmt.Sprintf("c%04d:%d", i, 1+i%4))
	}
	for i := range fallbacks {
		specs = append(specs, fmt.Sprintf("fb%03d:1:fallback", i))
	}
	return testPool(t, specs...)
}

// foldLog is a live projection that folded evs, in order.
type foldLog struct {
	live *projections.Live
	seq  uint64
}

func (f *foldLog) apply(evs ...domain.Event) {
	for _, ev := range evs {
		f.seq++
		ev.Seq = f.seq
		f.live.Apply(ev, 0)
	}
}

// ban is an automatic ban of cred's pair with "m" from a minute before
// testNow for an hour; manual makes it an operator's.
func ban(cred string, manual bool) domain.Event { return banAt(cred, "m", testNow, manual) }

// banAt is ban of cred's pair with model from a minute before now.
func banAt(cred, model string, now time.Time, manual bool) domain.Event {
	ev := scaleBan(cred, model, now.Add(-time.Minute), 1)
	if manual {
		ev.ID = "admin/" + cred + "/" + model
		ev.Ban.Origin, ev.Ban.Reason = domain.OriginAdmin, "admin: test"
	}
	return ev
}

// claim is replica's probe claim for interval n of banEv's ban.
func claim(banEv domain.Event, n int, replica string) domain.Event {
	return domain.Event{V: domain.SchemaVersion, Kind: domain.KindProbeClaimed, At: testNow.Add(-30 * time.Second),
		ID: domain.ProbeClaimID(banEv.ID, n), Probe: &domain.ProbeClaim{Credential: banEv.Ban.Credential,
			Model: "m", BanID: banEv.ID, Interval: n, Replica: replica}}
}

// In a large pool the picks' shares follow the weights of the usable
// candidates, and a banned candidate or one at its rpm limit is never
// picked.
func TestLargePoolSharesFollowWeights(t *testing.T) {
	_, pl := largePool(t, 200, 0)
	pl.groups.rng = rand.New(rand.NewPCG(1, 2))
	log := &foldLog{live: projections.NewLive(nil)}
	unusable := map[int]bool{}
	for i := range pl.cands {
		switch i % 10 {
		case 3:
			log.apply(ban(pl.cands[i].cred.name, false))
			unusable[i] = true
		case 6:
			pl.cands[i].pair = newLimits(1, 0, &usage{})
			pl.cands[i].reserve(testNow.Unix())
			unusable[i] = true
		}
	}
	var total int64
	for i := range pl.cands {
		if !unusable[i] {
			total += pl.cands[i].weight
		}
	}
	gate := log.live.Load()
	const n = 400_000
	counts := make([]int, len(pl.cands))
	for range n {
		i := pl.pick(gate, testNow, newIdxSet(len(pl.cands)), epChat, nil)
		if i < 0 {
			t.Fatal("no pick")
		}
		counts[i]++
	}
	var byWeight [5]float64
	var wantByWeight [5]float64
	for i, got := range counts {
		c := &pl.cands[i]
		if unusable[i] {
			if got != 0 {
				t.Errorf("%s (banned or at its limit) picked %d times", c.cred.name, got)
			}
			continue
		}
		want := float64(n) * float64(c.weight) / float64(total)
		// 5 standard deviations of a binomial count at the smallest share.
		if math.Abs(float64(got)-want) > 5*math.Sqrt(want) {
			t.Errorf("%s (weight %d) picked %d times, want %.0f ± %.0f", c.cred.name, c.weight, got, want, 5*math.Sqrt(want))
		}
		byWeight[c.weight] += float64(got)
		wantByWeight[c.weight] += want
	}
	for w := 1; w <= 4; w++ {
		if d := math.Abs(byWeight[w]-wantByWeight[w]) / wantByWeight[w]; d > 0.01 {
			t.Errorf("weight %d took %.0f picks, want %.0f (within 1%%)", w, byWeight[w], wantByWeight[w])
		}
	}
}

// countingGate counts the lookups selection makes in a real snapshot.
type countingGate struct {
	*projections.Snapshot
	n int
}

func (g *countingGate) Blocked(credential, model string, now time.Time) (domain.Block, bool) {
	g.n++
	return g.Snapshot.Blocked(credential, model, now)
}

// A pick in a pool of 1,000 credentials, a tenth of them banned, looks at
// about one candidate, not at all of them, and allocates nothing.
func TestLargePoolPickLooksAtFewCandidates(t *testing.T) {
	_, pl := largePool(t, 1000, 0)
	log := &foldLog{live: projections.NewLive(nil)}
	for i := 3; i < len(pl.cands); i += 10 {
		log.apply(ban(pl.cands[i].cred.name, false))
	}
	gate := &countingGate{Snapshot: log.live.Load()}
	const n = 10_000
	skip := newIdxSet(len(pl.cands))
	for range n {
		if pl.pick(gate, testNow, skip, epChat, nil) < 0 {
			t.Fatal("no pick")
		}
	}
	if per := float64(gate.n) / n; per > 1.5 {
		t.Fatalf("%.1f lookups a pick, want about 1.1 (9 in 10 candidates usable)", per)
	}
	var g Gate = gate
	if allocs := testing.AllocsPerRun(1000, func() { pl.pick(g, testNow, skip, epChat, nil) }); allocs != 0 {
		t.Fatalf("a pick allocates %.1f times", allocs)
	}
}

// A large pool whose primaries are banned but two serves from those two
// (however rarely a draw finds them); with all of them banned it serves
// from its fallbacks, a small fallback group and a large one alike; with
// those banned too, a pick finds nothing.
func TestLargePoolAllPrimariesBlockedGoesToFallback(t *testing.T) {
	for _, fallbacks := range []int{2, 100} {
		t.Run(fmt.Sprintf("%d-fallbacks", fallbacks), func(t *testing.T) {
			_, pl := largePool(t, 200, fallbacks)
			pl.groups.rng = rand.New(rand.NewPCG(3, 4))
			log := &foldLog{live: projections.NewLive(nil)}
			const left1, left2 = 57, 158
			for i := range pl.primary {
				if i != left1 && i != left2 {
					log.apply(ban(pl.cands[i].cred.name, i%2 == 0))
				}
			}
			for range 1000 {
				if i := pl.pick(log.live.Load(), testNow, newIdxSet(len(pl.cands)), epChat, nil); i != left1 && i != left2 {
					t.Fatalf("picked %d with only %d and %d of the primaries usable", i, left1, left2)
				}
			}
			log.apply(ban(pl.cands[left1].cred.name, false), ban(pl.cands[left2].cred.name, true))
			gate := log.live.Load()
			seen := map[int]bool{}
			for range 1000 {
				i := pl.pick(gate, testNow, newIdxSet(len(pl.cands)), epChat, nil)
				if i < pl.primary {
					t.Fatalf("picked %d with every primary banned", i)
				}
				seen[i] = true
			}
			if len(seen) < fallbacks*9/10 {
				t.Errorf("1,000 picks reached %d of %d fallbacks", len(seen), fallbacks)
			}
			for i := pl.primary; i < len(pl.cands); i++ {
				log.apply(ban(pl.cands[i].cred.name, false))
			}
			rej := &rejections{}
			if i := pl.pick(log.live.Load(), testNow, newIdxSet(len(pl.cands)), epChat, rej); i >= 0 {
				t.Fatalf("picked %d with every candidate banned", i)
			}
			if got := rej.n[rejectBanned].Load(); got < uint64(len(pl.cands)) {
				t.Errorf("%d rejections counted, want at least one for each of the %d candidates", got, len(pl.cands))
			}
		})
	}
}

// A recovery probe claim of this process in a large primary group goes
// first, once, however many pick at once; a claim folded later goes first
// on the next pick; another replica's claim lets nothing through.
func TestLargePoolProbeGoesFirstOnce(t *testing.T) {
	const n, banned = 200, 137
	_, pl := largePool(t, n, 0)
	pl.probes = newProbes("r1")
	log := &foldLog{live: projections.NewLive(nil)}
	b := ban(pl.cands[banned].cred.name, false)
	log.apply(b, claim(b, 0, "r1"))
	gate := log.live.Load()
	var wg sync.WaitGroup
	var mu sync.Mutex
	probes, hits := 0, 0
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			i, probe := pl.pickProbe(gate, testNow, newIdxSet(n), epChat, nil)
			mu.Lock()
			defer mu.Unlock()
			if probe {
				probes++
			}
			if i == banned {
				hits++
			}
		}()
	}
	wg.Wait()
	if probes != 1 || hits != 1 {
		t.Fatalf("%d probes, %d picks of the banned pair: want one of each", probes, hits)
	}

	// A claim folded after the picks began: the next pick takes it.
	_, pl = largePool(t, n, 0)
	pl.probes = newProbes("r1")
	pl.groups.rng = rand.New(rand.NewPCG(5, 6))
	log = &foldLog{live: projections.NewLive(nil)}
	b = ban(pl.cands[banned].cred.name, false)
	log.apply(b)
	for range 100 {
		if i, probe := pl.pickProbe(log.live.Load(), testNow, newIdxSet(n), epChat, nil); i == banned || probe {
			t.Fatalf("before the claim: pick %d probe %v", i, probe)
		}
	}
	log.apply(claim(b, 0, "r1"))
	if i, probe := pl.pickProbe(log.live.Load(), testNow, newIdxSet(n), epChat, nil); i != banned || !probe {
		t.Fatalf("the pick after the claim: %d probe %v, want the probe of %d", i, probe, banned)
	}
	log.apply(claim(b, 1, "r2"))
	for range 1000 {
		if i, probe := pl.pickProbe(log.live.Load(), testNow, newIdxSet(n), epChat, nil); i == banned || probe {
			t.Fatalf("with the claim spent and another replica's: pick %d probe %v", i, probe)
		}
	}
}

// Through the proxy: a model served by 100 primaries, every one banned by
// an operator, and a fallback answers from the fallback; with the fallback
// banned too, the request is exhausted at once, as in a small pool.
func TestLargePoolThroughTheProxy(t *testing.T) {
	primary, fallback := newUpstream(t), newUpstream(t)
	var creds []Credential
	var names []string
	for i := range 100 {
		creds = append(creds, cred(fmt.Sprintf("p%03d", i), primary))
		names = append(names, creds[i].Name)
	}
	fb := cred("fb", fallback)
	fb.IsFallback = true
	creds = append(creds, fb)
	names = append(names, fb.Name)
	log := &foldLog{live: projections.NewLive(nil)}
	f := newFixture(t, creds, routesFor("gpt-4o", names...), func(d *Deps) {
		d.Gate = func() Gate { return log.live.Load() }
	})
	for _, n := range names[:100] {
		log.apply(banAt(n, "gpt-4o", f.clock.Now(), true))
	}
	for range 5 {
		if resp, body := f.post("/v1/chat/completions", chatReq); resp.StatusCode != 200 {
			t.Fatalf("with the primaries banned: %d %s", resp.StatusCode, body)
		}
	}
	if primary.count() != 0 || fallback.count() != 5 {
		t.Fatalf("primaries saw %d requests, the fallback %d: want 0 and 5", primary.count(), fallback.count())
	}
	log.apply(banAt("fb", "gpt-4o", f.clock.Now(), true))
	resp, body := f.post("/v1/chat/completions", chatReq)
	if e := decodeExhaustion(t, body); resp.StatusCode != 429 || e.Error.Code != "rate_limit_exceeded" {
		t.Fatalf("with every candidate banned: %d %s", resp.StatusCode, body)
	}
	if primary.count() != 0 || fallback.count() != 5 {
		t.Fatalf("an exhausted request reached an upstream")
	}
}

// Concurrent picks in a large pool fill every candidate's rpm limit
// exactly and then find nothing.
func TestLargePoolHonoursRateLimitsUnderConcurrency(t *testing.T) {
	p, pl := largePool(t, 100, 0)
	for _, c := range p.current().creds {
		c.limits.rpm = 5
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	counts := map[string]int{}
	misses := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				i := pl.pick(nil, testNow, newIdxSet(len(pl.cands)), epChat, nil)
				mu.Lock()
				if i < 0 {
					misses++
				} else {
					counts[pl.cands[i].cred.name]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(counts) != 100 || misses != 300 {
		t.Fatalf("%d candidates picked, %d picks found nothing: want all 100 and 300", len(counts), misses)
	}
	for name, n := range counts {
		if n != 5 {
			t.Errorf("%s picked %d times, want its 5 rpm", name, n)
		}
	}
}

// A claimed pair at its rate limit gets its probe once its window has
// room, though no claim was folded in between.
func TestLargePoolProbeAtItsRateLimitWaitsForRoom(t *testing.T) {
	const n, banned = 200, 42
	_, pl := largePool(t, n, 0)
	pl.probes = newProbes("r1")
	pl.groups.rng = rand.New(rand.NewPCG(7, 8))
	pl.cands[banned].pair = newLimits(1, 0, &usage{})
	pl.cands[banned].reserve(testNow.Unix())
	log := &foldLog{live: projections.NewLive(nil)}
	b := ban(pl.cands[banned].cred.name, false)
	log.apply(b, claim(b, 0, "r1"))
	if i, probe := pl.pickProbe(log.live.Load(), testNow, newIdxSet(n), epChat, nil); i == banned || probe {
		t.Fatalf("at its limit: pick %d probe %v", i, probe)
	}
	later := testNow.Add(time.Minute)
	if i, probe := pl.pickProbe(log.live.Load(), later, newIdxSet(n), epChat, nil); i != banned || !probe {
		t.Fatalf("a minute later: pick %d probe %v, want the probe of %d", i, probe, banned)
	}
}
