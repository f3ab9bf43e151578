package eventlog

import (
	"sync"
	"sync/atomic"
)

// pubQueue is Publish's bounded queue: any goroutine offers, the publisher
// goroutine alone takes. It holds what is queued in a slice that grows
// with the queue and is let go once a burst has been taken, so its memory,
// and the collector's work in every cycle, follow what is queued rather
// than the bound. (A channel's buffer is allocated whole at the bound: at
// the default queue_size its 65,536 pointer slots were 512 KB the
// collector scanned in every cycle, about a third of the marking of an
// idle router.) An offer holds the lock for an append; the taker holds it
// only to swap the queued slice for an empty one.
type pubQueue struct {
	bound int
	// ready holds a signal once something was offered since the taker last
	// looked; the taker waits on it in its select.
	ready chan struct{}
	// queued counts what is offered and not yet taken (Stats.Pending).
	queued atomic.Int64

	mu      sync.Mutex
	offered []*pubItem // oldest first

	// The taker's: a swapped-out slice and how far it has been taken.
	taken []*pubItem
	next  int
}

// keptQueueCap bounds the slice kept for the next swap: a burst's larger
// one goes to the collector once it is taken.
const keptQueueCap = 1024

func newPubQueue(bound int) *pubQueue {
	return &pubQueue{bound: bound, ready: make(chan struct{}, 1)}
}

// offer queues it unless bounded is set and the queue holds its bound;
// Flush markers are queued past it.
func (q *pubQueue) offer(it *pubItem, bounded bool) bool {
	q.mu.Lock()
	if bounded && q.queued.Load() >= int64(q.bound) {
		q.mu.Unlock()
		return false
	}
	q.offered = append(q.offered, it)
	q.queued.Add(1)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default: // a signal is already waiting
	}
	return true
}

// take returns the oldest queued item, or false when the queue is empty.
// Only the publisher goroutine takes (and stop, once it has ended).
func (q *pubQueue) take() (*pubItem, bool) {
	if q.next == len(q.taken) {
		kept := q.taken[:0]
		if cap(kept) > keptQueueCap {
			kept = nil
		}
		q.mu.Lock()
		q.taken, q.offered = q.offered, kept
		q.mu.Unlock()
		q.next = 0
		if len(q.taken) == 0 {
			return nil, false
		}
	}
	it := q.taken[q.next]
	q.taken[q.next] = nil
	q.next++
	q.queued.Add(-1)
	return it, true
}

// len is how many items are queued.
func (q *pubQueue) len() int { return int(q.queued.Load()) }
