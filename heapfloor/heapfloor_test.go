package heapfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

const mib = 1 << 20

func TestPercent(t *testing.T) {
	for _, c := range []struct {
		name               string
		floor, live, roots uint64
		base, want         int
	}{
		{"a small heap waits for the floor", 64 * mib, 8 * mib, 0, 100, 700},
		{"roots count toward the goal", 64 * mib, 8 * mib, 8 * mib, 100, 350},
		{"a heap past half the floor gets the base", 64 * mib, 40 * mib, 0, 100, 100},
		{"a heap past the floor gets the base", 64 * mib, 80 * mib, 0, 100, 100},
		{"the base is a lower bound", 64 * mib, 16 * mib, 0, 400, 400},
		{"an empty heap is bounded by the runtime's minimum goal", 64 * mib, 0, 0, 100, 1600},
		{"a small floor is bounded the same way", 8 * mib, 1 * mib, 0, 100, 200},
	} {
		if got := Percent(c.floor, c.live, c.roots, c.base); got != c.want {
			t.Errorf("%s: Percent(%d MiB, %d MiB, %d MiB, %d) = %d, want %d", c.name,
				c.floor/mib, c.live/mib, c.roots/mib, c.base, got, c.want)
		}
	}
}

// read returns the runtime's heap goal and GC percent.
func read() (goal uint64, percent uint64) {
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

// cycle runs a collection and waits for the pacer's adjustment after it.
func cycle(t *testing.T, adjusted <-chan int) int {
	t.Helper()
	runtime.GC()
	select {
	case p := <-adjusted:
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("the pacer did not adjust after a collection")
		return 0
	}
}

func pacer(t *testing.T, floor uint64) (*Pacer, <-chan int) {
	t.Helper()
	was := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(was) })
	adjusted := make(chan int, 16)
	p := start(floor, 100, func(percent int) { adjusted <- percent })
	t.Cleanup(p.Stop)
	<-adjusted // the one Start makes
	return p, adjusted
}

// Under the pacer a collection leaves the next one at the floor; without
// it, at twice the live heap.
func TestPacerHoldsTheNextCycleToTheFloor(t *testing.T) {
	const floor = 256 * mib
	p, adjusted := pacer(t, floor)
	set := cycle(t, adjusted)
	goal, percent := read()
	if int(percent) != set || set <= 100 {
		t.Fatalf("the pacer set %d%%, the runtime runs at %d%%; want one value above 100", set, percent)
	}
	if goal < floor*9/10 || goal > floor*11/10 {
		t.Fatalf("the heap goal is %d MiB after a paced cycle, want about the floor of %d MiB", goal/mib, floor/mib)
	}
	// A second cycle is paced again.
	if again := cycle(t, adjusted); again <= 100 {
		t.Fatalf("the second cycle set %d%%", again)
	}

	p.Stop()
	runtime.GC()
	goal, percent = read()
	if percent != 100 || goal > floor/4 {
		t.Fatalf("after Stop the runtime runs at %d%% with a goal of %d MiB, want 100%% and twice the live heap", percent, goal/mib)
	}
}

// A live heap past half the floor is paced by the base percent alone.
func TestPacerLeavesALargeHeapToTheBase(t *testing.T) {
	const floor = 16 * mib
	held := make([]byte, 24*mib)
	_, adjusted := pacer(t, floor)
	if set := cycle(t, adjusted); set != 100 {
		t.Fatalf("with %d MiB live under a floor of %d MiB the pacer set %d%%, want the base 100", len(held)/mib, floor/mib, set)
	}
	goal, _ := read()
	if goal < 2*uint64(len(held)) {
		t.Fatalf("the heap goal is %d MiB, want at least twice the %d MiB live", goal/mib, len(held)/mib)
	}
	runtime.KeepAlive(held)
}

// A memory limit (GOMEMLIMIT) still bounds the heap: the runtime starts a
// cycle at the lower of the limit's goal and the floor's.
func TestAMemoryLimitBoundsThePacedHeap(t *testing.T) {
	const floor, limit = 256 * mib, 32 * mib
	was := debug.SetMemoryLimit(limit)
	t.Cleanup(func() { debug.SetMemoryLimit(was) })
	_, adjusted := pacer(t, floor)
	cycle(t, adjusted)
	if goal, _ := read(); goal > limit {
		t.Fatalf("with a %d MiB memory limit the heap goal is %d MiB under a %d MiB floor", limit/mib, goal/mib, floor/mib)
	}
}
