package proxy

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/domain"
)

var testNow = time.Unix(1_800_000_000, 0)

// testPool builds a pool for model "m" from "name:weight[:fallback]" specs.
func testPool(t testing.TB, specs ...string) (*Proxy, *pool) {
	t.Helper()
	var creds []Credential
	var routes []Route
	for _, s := range specs {
		parts := strings.Split(s, ":")
		c := Credential{Name: parts[0], Type: domain.CredentialOpenAI, BaseURL: "http://127.0.0.1:1"}
		if len(parts) > 1 {
			c.Weight = int(parts[1][0] - '0')
		}
		c.IsFallback = len(parts) > 2
		creds = append(creds, c)
		routes = append(routes, Route{Model: "m", Credential: c.Name})
	}
	p, err := New(Deps{Credentials: creds, Routes: routes, MasterKey: "k", Clock: clockwork.NewFakeClockAt(testNow)})
	if err != nil {
		t.Fatal(err)
	}
	return p, p.poolFor("m")
}

func pickNames(pl *pool, g Gate, now time.Time, n int) string {
	var b strings.Builder
	for range n {
		i := pl.pick(g, now, newIdxSet(len(pl.cands)), epChat, nil)
		if i < 0 {
			b.WriteByte('-')
			continue
		}
		b.WriteString(pl.cands[i].cred.name)
	}
	return b.String()
}

func TestSmoothWeightedRoundRobinSequence(t *testing.T) {
	now := testNow
	_, pl := testPool(t, "a:5", "b:1", "c:1")
	// nginx's example: weights 5,1,1 interleave as a a b a c a a.
	if got := pickNames(pl, nil, now, 14); got != "aabacaaaabacaa" {
		t.Errorf("sequence %q, want aabacaa twice", got)
	}
	_, pl = testPool(t, "a:1", "b:1", "c:1")
	if got := pickNames(pl, nil, now, 6); got != "abcabc" {
		t.Errorf("equal weights %q, want config order rotation", got)
	}
}

func TestPickSkipsBlockedAndFallsBackLast(t *testing.T) {
	now := testNow
	_, pl := testPool(t, "f:1:fallback", "a:1", "b:1")
	if got := pickNames(pl, nil, now, 4); got != "abab" {
		t.Errorf("with primaries %q", got)
	}
	g := mapGate{{Credential: "a", Model: "m"}: {Reason: domain.BlockBanned, Permanent: true}}
	if got := pickNames(pl, g, now, 3); got != "bbb" {
		t.Errorf("a banned %q", got)
	}
	g[domain.Key{Credential: "b", Model: "*"}] = domain.Block{Reason: domain.BlockCoolingDown, Until: now.Add(time.Second)}
	if got := pickNames(pl, g, now, 2); got != "ff" {
		t.Errorf("primaries blocked %q", got)
	}
	if got := pickNames(pl, g, now.Add(time.Second), 2); got != "bb" {
		t.Errorf("after b's cooldown %q", got)
	}
	// Within one request, tried primaries give way to the fallback.
	skip := newIdxSet(len(pl.cands))
	var order []string
	for i := pl.pick(nil, now, skip, epChat, nil); i >= 0; i = pl.pick(nil, now, skip, epChat, nil) {
		skip.set(i)
		order = append(order, pl.cands[i].cred.name)
	}
	if strings.Join(order, "") != "abf" && strings.Join(order, "") != "baf" {
		t.Errorf("one request's hops %v, want both primaries then the fallback", order)
	}
}

func TestPickHonoursRateLimitsUnderConcurrency(t *testing.T) {
	now := testNow
	p, pl := testPool(t, "a:1", "b:3")
	p.current().byName["a"].limits.rpm = 50
	var wg sync.WaitGroup
	var mu sync.Mutex
	counts := map[string]int{}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				if i := pl.pick(nil, now, newIdxSet(len(pl.cands)), epChat, nil); i >= 0 {
					mu.Lock()
					counts[pl.cands[i].cred.name]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if counts["a"] != 50 || counts["b"] != 750 {
		t.Errorf("picks %v, want a capped at exactly its 50 rpm and b taking the rest", counts)
	}
	if rpm, _ := p.Usage("a", ""); rpm != 50 {
		t.Errorf("a's window holds %d requests", rpm)
	}
}

func TestPickDoesNotAllocate(t *testing.T) {
	now := testNow
	_, pl := testPool(t, "a:3", "b:2", "c:1", "f:1:fallback")
	pl.cands[0].pair.rpm = 1 << 30 // make the windows count
	g := mapGate{{Credential: "c", Model: "m"}: {Reason: domain.BlockBanned, Permanent: true}}
	var gate Gate = g
	skip := newIdxSet(len(pl.cands))
	allocs := testing.AllocsPerRun(1000, func() {
		skip[0] = 0
		if pl.pick(gate, now, skip, epChat, nil) < 0 {
			t.Fatal("no pick")
		}
	})
	if allocs != 0 {
		t.Errorf("pick allocates %.1f times", allocs)
	}
}
