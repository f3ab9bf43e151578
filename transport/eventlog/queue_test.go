package eventlog

import (
	"sync"
	"testing"
	"time"
)

// The queue hands items out oldest first, refuses a bounded offer once it
// holds its bound (a Flush marker still goes in), and signals ready when
// something was offered.
func TestPubQueueOrderAndBound(t *testing.T) {
	q := newPubQueue(3)
	if _, ok := q.take(); ok {
		t.Fatal("an empty queue handed out an item")
	}
	items := []*pubItem{{events: 1}, {events: 2}, {events: 3}}
	for _, it := range items {
		if !q.offer(it, true) {
			t.Fatalf("offer %d refused below the bound", it.events)
		}
	}
	select {
	case <-q.ready:
	default:
		t.Fatal("no ready signal after offers")
	}
	if q.offer(&pubItem{events: 4}, true) {
		t.Fatal("a bounded offer went in at the bound")
	}
	marker := &pubItem{flushed: make(chan struct{})}
	if !q.offer(marker, false) {
		t.Fatal("a Flush marker was refused at the bound")
	}
	if q.len() != 4 {
		t.Fatalf("len %d, want 4", q.len())
	}
	for i, want := range append(items, marker) {
		got, ok := q.take()
		if !ok || got != want {
			t.Fatalf("take %d: got %v (%v), want %v", i, got, ok, want)
		}
	}
	if _, ok := q.take(); ok || q.len() != 0 {
		t.Fatalf("the queue has %d left after everything was taken", q.len())
	}
	if !q.offer(&pubItem{events: 5}, true) {
		t.Fatal("offer refused once the queue was taken empty")
	}
}

// What a burst grew the queue to is let go once it has been taken: the
// queue's memory follows what is queued, not the bound. A short queue
// reuses its two kept slices and allocates nothing.
func TestPubQueueLetsABurstGo(t *testing.T) {
	q := newPubQueue(DefaultQueueSize)
	it := &pubItem{}
	for range DefaultQueueSize {
		q.offer(it, true)
	}
	for range DefaultQueueSize {
		q.take()
	}
	q.take() // the swap after the last item: the burst's slice is not kept
	if got := cap(q.taken) + cap(q.offered); got > keptQueueCap {
		t.Fatalf("after a burst of %d the queue keeps %d slots, want at most %d", DefaultQueueSize, got, keptQueueCap)
	}
	for _, slot := range q.offered[:cap(q.offered)] {
		if slot != nil {
			t.Fatal("a kept slot still points at a taken item")
		}
	}
	round := func() {
		for range 100 {
			q.offer(it, true)
		}
		for range 101 {
			q.take()
		}
	}
	round() // grows the two slices the rounds then swap
	round()
	if allocs := testing.AllocsPerRun(50, round); allocs != 0 {
		t.Fatalf("a round of 100 offers and takes allocated %.1f times, want 0", allocs)
	}
}

// Once the taker has found the queue empty and used up the signal, the
// next offer signals again: the publisher never sleeps on a queued item.
func TestPubQueueSignalsAfterEmpty(t *testing.T) {
	q := newPubQueue(8)
	for round := range 3 {
		q.offer(&pubItem{events: round}, true)
		if _, ok := q.take(); !ok {
			t.Fatalf("round %d: nothing to take after an offer", round)
		}
		if _, ok := q.take(); ok {
			t.Fatalf("round %d: a second item", round)
		}
		select {
		case <-q.ready:
		default:
			t.Fatalf("round %d: no signal for the offer", round)
		}
		select {
		case <-q.ready:
			t.Fatalf("round %d: a second signal with nothing offered", round)
		default:
		}
	}
}

// Many goroutines offering while one takes: every item comes out once, and
// each goroutine's in the order it offered them.
func TestPubQueueManyOfferOneTakes(t *testing.T) {
	const goroutines, each = 8, 2000
	q := newPubQueue(goroutines * each)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				if !q.offer(&pubItem{events: g*each + i}, true) {
					t.Errorf("goroutine %d: offer %d refused below the bound", g, i)
					return
				}
			}
		})
	}
	last := make([]int, goroutines)
	for g := range last {
		last[g] = -1
	}
	got := 0
	for got < goroutines*each {
		it, ok := q.take()
		if !ok {
			select {
			case <-q.ready:
			case <-time.After(10 * time.Second):
				t.Fatalf("no signal with %d of %d items taken", got, goroutines*each)
			}
			continue
		}
		g, i := it.events/each, it.events%each
		if i <= last[g] {
			t.Fatalf("goroutine %d: item %d after %d", g, i, last[g])
		}
		last[g] = i
		got++
	}
	wg.Wait()
	if _, ok := q.take(); ok {
		t.Fatal("an item left over after every offered one was taken")
	}
}
