package proxy

import "testing"

func TestWindowSlidesOverSixtySeconds(t *testing.T) {
	var w window
	const t0 = 1_800_000_000
	w.add(t0, 3)
	w.add(t0+30, 2)
	w.add(t0+30, 1)
	cases := []struct {
		sec  int64
		want int64
	}{
		{t0 - 1, 0}, // before anything (a clock step back sees nothing from the future)
		{t0, 3}, {t0 + 30, 6}, {t0 + 59, 6}, {t0 + 60, 3}, {t0 + 89, 3}, {t0 + 90, 0},
	}
	for _, c := range cases {
		if got := w.sum(c.sec); got != c.want {
			t.Errorf("sum at +%d = %d, want %d", c.sec-t0, got, c.want)
		}
	}
	// A bucket reused a minute later starts over.
	w.add(t0+60, 1)
	if got := w.sum(t0 + 60); got != 4 {
		t.Errorf("after reuse: %d, want 3 (from +30) + 1", got)
	}
	w.sub(t0+60, 5)
	if got := w.sum(t0 + 60); got != 3 {
		t.Errorf("sub never goes below zero: %d", got)
	}
	w.sub(t0, 1) // that bucket now holds +60: nothing happens
	if got := w.sum(t0 + 60); got != 3 {
		t.Errorf("sub of an expired second changed the window: %d", got)
	}
}

func TestWindowFreeIn(t *testing.T) {
	var w window
	const t0 = 1_800_000_000
	w.add(t0, 2)
	w.add(t0+10, 1)
	w.add(t0+20, 1)
	if got := w.freeIn(t0+20, 5); got != 0 {
		t.Errorf("under the limit: %d", got)
	}
	// 4 in the window, limit 4: one must leave; the bucket at +0 leaves
	// at +60, 40 s from +20.
	if got := w.freeIn(t0+20, 4); got != 40 {
		t.Errorf("limit 4: %d, want 40", got)
	}
	// limit 2: both +0 and +10 must leave: at +70, 50 s from +20.
	if got := w.freeIn(t0+20, 2); got != 50 {
		t.Errorf("limit 2: %d, want 50", got)
	}
}

func TestLimitsReserveAndTokens(t *testing.T) {
	l := newLimits(2, 100, &usage{})
	const t0 = 1_800_000_000
	if !l.reserve(t0) || !l.reserve(t0) || l.reserve(t0) {
		t.Fatal("rpm 2 must admit exactly two requests")
	}
	if !l.full(t0) {
		t.Error("not full at the rpm limit")
	}
	l2 := newLimits(0, 100, &usage{})
	l2.charge(t0, 60)
	if l2.full(t0) {
		t.Error("full under the tpm limit")
	}
	l2.charge(t0+1, 40)
	if !l2.full(t0+1) || l2.freeIn(t0+1) != 59 {
		t.Errorf("at the tpm limit: full=%v freeIn=%d, want true and 59", l2.full(t0+1), l2.freeIn(t0+1))
	}
	unlimited := newLimits(-1, -1, &usage{})
	for range 1000 {
		if !unlimited.reserve(t0) {
			t.Fatal("an unlimited window refused")
		}
	}
	if unlimited.use.reqs.sum(t0) != 1000 {
		t.Error("an unlimited window must still count for /health")
	}
}

// The running total always agrees with the buckets, whatever the order of
// adds, takes-back and jumps in time.
func TestWindowCountMatchesBuckets(t *testing.T) {
	var w window
	sec := int64(1_800_000_000)
	seed := uint64(42)
	rnd := func(n uint64) uint64 { // a fixed xorshift sequence
		seed ^= seed << 13
		seed ^= seed >> 7
		seed ^= seed << 17
		return seed % n
	}
	for i := range 20000 {
		switch rnd(10) {
		case 0:
			sec += int64(rnd(90)) // jumps, up to past the whole window
		case 1:
			w.sub(sec-int64(rnd(3)), uint32(rnd(5)))
		case 2:
			w.add(sec-int64(rnd(70)), uint32(rnd(5))) // late writers
		default:
			w.add(sec, uint32(rnd(5)))
		}
		if c, s := w.count(sec), w.sum(sec); c != s {
			t.Fatalf("step %d: count %d, buckets hold %d", i, c, s)
		}
	}
}

func TestWindowCountUnderConcurrency(t *testing.T) {
	var w window
	const t0 = 1_800_000_000
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 5000 {
				sec := int64(t0 + i/50 + g%2)
				w.add(sec, 1)
				if i%7 == 0 {
					w.sub(sec, 1)
				}
				w.count(sec)
			}
		}()
	}
	for range 4 {
		<-done
	}
	end := int64(t0 + 5000/50 + 1)
	if c, s := w.count(end), w.sum(end); c != s {
		t.Errorf("count %d, buckets hold %d", c, s)
	}
}
