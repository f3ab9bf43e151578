// Package heapfloor paces the garbage collector so that it does not start
// a cycle before the heap has grown to a floor.
//
// With GOGC's default the collector runs whenever the heap doubles its
// live part. A router's live heap is small (10-20 MB with the embedded
// log) and it allocates a few KB per request, so under load a cycle comes
// every few hundred milliseconds. Each cycle's marking costs about the
// same whatever the interval, so fewer cycles cost less CPU. Holding the
// next cycle until the heap reaches the floor makes cycles rarer by the
// ratio of the floor to twice the live heap, for a heap that many bytes
// larger at most. On one busy processor a cycle is a stretch of
// milliseconds in which requests wait behind it, and the stretch grows
// with the heap the cycle ends, so a floor trades the slowest requests at
// high rates for CPU: serve leaves it off unless server.heap_floor_mb
// sets one. Once the live heap passes half the floor the
// pacer asks for nothing more than the base percent, so a large pool is
// paced as GOGC paces it. A memory limit (GOMEMLIMIT) still applies: the
// runtime starts a cycle at whichever of the two goals comes first.
package heapfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// runtimeMinimum is the runtime's smallest heap goal at GOGC=100. It scales
// with the percent (4 MB × percent/100), so a percent past floor/40 KB
// would hold the goal above the floor for a live heap next to nothing.
const runtimeMinimum = 4 << 20

// Percent is the GC percent at which a heap whose last cycle found live
// bytes live, with roots bytes of stacks and globals to scan, next starts
// a cycle at floor bytes: the runtime's goal is live + (live+roots) ×
// percent/100. It is never below base, so a live heap past half the floor
// is paced by base alone, and never so high that the runtime's minimum
// goal, which grows with the percent, passes the floor.
func Percent(floor, live, roots uint64, base int) int {
	if live >= floor {
		return base
	}
	p := (floor - live) * 100 / max(live+roots, 1)
	p = min(p, floor*100/runtimeMinimum)
	return int(max(p, uint64(base)))
}

// Pacer sets the collector's percent after every cycle from the live heap
// that cycle found, until Stop.
type Pacer struct {
	floor   uint64
	base    int
	stopped atomic.Bool
	mu      sync.Mutex // one adjustment at a time
	samples [3]metrics.Sample
	// adjusted, when set (tests), is told every percent the pacer sets.
	adjusted func(percent int)
}

// Start paces the collector to floor bytes over base percent (GOGC's
// value, 100 by default) and sets the percent at once.
func Start(floor uint64, base int) *Pacer { return start(floor, base, nil) }

func start(floor uint64, base int, adjusted func(int)) *Pacer {
	p := &Pacer{floor: floor, base: base, adjusted: adjusted}
	p.samples[0].Name = "/gc/heap/live:bytes"
	p.samples[1].Name = "/gc/scan/stack:bytes"
	p.samples[2].Name = "/gc/scan/globals:bytes"
	p.adjust()
	p.arm()
	return p
}

// Stop ends the pacing and puts the collector back at the base percent.
func (p *Pacer) Stop() {
	p.stopped.Store(true)
	p.mu.Lock()
	defer p.mu.Unlock()
	debug.SetGCPercent(p.base)
}

// sentinel is dropped as soon as it is made, so the cycle after it finds
// it unreachable and runs its cleanup: the pacer's hook into each cycle's
// end. It is larger than the runtime's tiny allocations, whose cleanups
// may never run.
type sentinel [64]byte

// arm registers the hook for the next cycle.
func (p *Pacer) arm() {
	runtime.AddCleanup(new(sentinel), func(p *Pacer) { p.cycled() }, p)
}

func (p *Pacer) cycled() {
	if p.stopped.Load() {
		return
	}
	p.adjust()
	p.arm()
}

// adjust sets the percent for the live heap the last cycle found.
func (p *Pacer) adjust() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped.Load() {
		return
	}
	metrics.Read(p.samples[:])
	live := p.samples[0].Value.Uint64()
	roots := p.samples[1].Value.Uint64() + p.samples[2].Value.Uint64()
	percent := Percent(p.floor, live, roots, p.base)
	debug.SetGCPercent(percent)
	if p.adjusted != nil {
		p.adjusted(percent)
	}
}
