package proxy

import (
	"math"
	"sync/atomic"
)

// windowSeconds is the length of a rate-limit window.
const windowSeconds = 60

// window counts requests or tokens over a sliding 60 s window as a ring of
// one-second buckets. Each bucket packs the low 32 bits of its Unix second
// and its count into one word, and a running total over the live buckets
// is kept beside them, so counting and checking a limit are a few atomic
// operations: no lock, no allocation, and a cost that does not grow as the
// window fills (no timestamp per request to scan on every check).
//
// The total is kept exact by one rule: whoever replaces a bucket holding an
// older second (the sweep that moves head forward, or an add that gets there
// first) takes that bucket's count off the total, and a compare-and-swap
// makes sure only one of them does. While a sweep is under way the total can
// briefly still include counts that just expired, which only errs on the
// side of the limit.
type window struct {
	head    atomic.Int64 // the latest second swept to
	total   atomic.Int64 // the sum of the buckets in (head-60, head]
	buckets [windowSeconds]atomic.Uint64
}

func packBucket(sec uint32, n uint32) uint64 { return uint64(sec)<<32 | uint64(n) }

func bucketSecond(v uint64) uint32 { return uint32(v >> 32) }

// advance moves head to sec, emptying the buckets of the seconds passed,
// and returns the head.
func (w *window) advance(sec int64) int64 {
	h := w.head.Load()
	if sec <= h {
		return h
	}
	if !w.head.CompareAndSwap(h, sec) {
		return w.head.Load()
	}
	for s := max(h+1, sec-windowSeconds+1); s <= sec; s++ {
		b := &w.buckets[uint64(s)%windowSeconds]
		for {
			old := b.Load()
			if bucketSecond(old) == uint32(s) {
				break // an add for second s got here first
			}
			if b.CompareAndSwap(old, packBucket(uint32(s), 0)) {
				w.total.Add(-int64(uint32(old)))
				break
			}
		}
	}
	return sec
}

// add counts n at second sec. A count older than the window is dropped.
func (w *window) add(sec int64, n uint32) {
	if h := w.advance(sec); sec <= h-windowSeconds {
		return
	}
	b := &w.buckets[uint64(sec)%windowSeconds]
	s := uint32(sec)
	for {
		old := b.Load()
		if bucketSecond(old) == s {
			c := uint32(old) + n
			if c < n {
				c = math.MaxUint32
			}
			if b.CompareAndSwap(old, packBucket(s, c)) {
				w.total.Add(int64(c - uint32(old)))
				return
			}
			continue
		}
		if int32(bucketSecond(old)-s) > 0 {
			return // the window moved a minute past sec while we got here
		}
		if b.CompareAndSwap(old, packBucket(s, n)) {
			w.total.Add(int64(n) - int64(uint32(old)))
			return
		}
	}
}

// sub takes back n counted at second sec, when that bucket still holds it.
func (w *window) sub(sec int64, n uint32) {
	b := &w.buckets[uint64(sec)%windowSeconds]
	s := uint32(sec)
	for {
		old := b.Load()
		if bucketSecond(old) != s {
			return
		}
		d := min(n, uint32(old))
		if b.CompareAndSwap(old, packBucket(s, uint32(old)-d)) {
			w.total.Add(-int64(d))
			return
		}
	}
}

// count is the window's total at second sec, in constant time.
func (w *window) count(sec int64) int64 {
	w.advance(sec)
	return w.total.Load()
}

// sum recomputes the count over the 60 s ending at second sec from the
// buckets alone, without touching the window (for /health and tests).
func (w *window) sum(sec int64) int64 {
	s := uint32(sec)
	var total int64
	for i := range w.buckets {
		v := w.buckets[i].Load()
		// Unsigned age: buckets from the future (a clock step back) and
		// never-written buckets wrap to a huge age and are skipped.
		if s-bucketSecond(v) < windowSeconds {
			total += int64(uint32(v))
		}
	}
	return total
}

// freeIn returns how many seconds from sec until the window's sum drops
// below limit, at bucket granularity; 0 when it already is.
func (w *window) freeIn(sec int64, limit int64) int64 {
	total := w.sum(sec)
	if total < limit {
		return 0
	}
	s := uint32(sec)
	var byAge [windowSeconds]int64
	for i := range w.buckets {
		v := w.buckets[i].Load()
		if age := s - bucketSecond(v); age < windowSeconds {
			byAge[age] += int64(uint32(v))
		}
	}
	for age := windowSeconds - 1; age >= 0; age-- {
		total -= byAge[age]
		if total < limit {
			// A bucket of age a leaves the window windowSeconds-a
			// seconds from now.
			return int64(windowSeconds - age)
		}
	}
	return windowSeconds
}

// usage is the request and token windows of a credential or a pair. It
// outlives table rebuilds; the limits checked against it do not.
type usage struct {
	reqs window
	toks window
	// lazy marks the windows of a pair of a model only clients name,
	// counted in Proxy.lazyPairs (table.go, forget.go).
	lazy bool
}

// limits is a requests-per-minute and tokens-per-minute limit over one
// usage; a limit <= 0 is unlimited. The limits are fixed when a table is
// built, so the hot path reads them without synchronisation.
type limits struct {
	rpm, tpm int64
	use      *usage
}

func newLimits(rpm, tpm int, u *usage) limits {
	return limits{rpm: normLimit(rpm), tpm: normLimit(tpm), use: u}
}

func normLimit(v int) int64 {
	if v <= 0 {
		return 0
	}
	return int64(v)
}

// full reports whether the next request would exceed a limit at second sec.
func (l *limits) full(sec int64) bool {
	if l.rpm > 0 && l.use.reqs.count(sec) >= l.rpm {
		return true
	}
	return l.tpm > 0 && l.use.toks.count(sec) >= l.tpm
}

// reserve counts one request at sec unless that exceeds the rpm limit; the
// count is taken first and given back on failure, so concurrent callers
// never overshoot the limit.
func (l *limits) reserve(sec int64) bool {
	l.use.reqs.add(sec, 1)
	if l.rpm > 0 && l.use.reqs.count(sec) > l.rpm {
		l.use.reqs.sub(sec, 1)
		return false
	}
	return true
}

// release gives back a reservation.
func (l *limits) release(sec int64) { l.use.reqs.sub(sec, 1) }

// charge counts tokens used by a finished response.
func (l *limits) charge(sec int64, tokens int64) {
	if tokens <= 0 {
		return
	}
	if tokens > math.MaxUint32 {
		tokens = math.MaxUint32
	}
	l.use.toks.add(sec, uint32(tokens))
}

// freeIn returns the seconds until the next request fits under both limits.
func (l *limits) freeIn(sec int64) int64 {
	var wait int64
	if l.rpm > 0 {
		wait = l.use.reqs.freeIn(sec, l.rpm)
	}
	if l.tpm > 0 {
		wait = max(wait, l.use.toks.freeIn(sec, l.tpm))
	}
	return wait
}
