package eventlog

import (
	"sync"
	"sync/atomic"
)

// pubQueue is Publish's bounded queue: any goroutine offers, the publisher
// goroutine alone takes. It holds what is queued in a slice that grows
// with the queue and is let go once a burst has been taken, so its memory,
// and the collector's work in every cycle, follow what is queued rather
// than the bound: a channel's buffer is allocated whole at the bound, and
// at the default queue_size that is 512 KB of pointer slots the collector
// would scan in every cycle. An offer holds the lock for an append (which,
// when the slice grows, copies what is queued: a cost only a burst pays);
// the taker holds it only to swap the queued slice for an empty one.
type pubQueue struct {
	bound int
	// ready holds a signal when something may have been offered since the
	// taker last found the queue empty; the taker waits on it in its
	// select, and a wake-up may find nothing (the item went with an
	// earlier swap).
	ready chan struct{}
	// queued counts what is offered and not yet taken (Stats.Pending).
	queued atomic.Int64
	// prompt counts the queued items that should not wait out a quiet
	// round (pubItem.prompt); hurry holds a signal when one was offered
	// or the queue reached lingerUnder since the taker last looked.
	prompt atomic.Int64
	hurry  chan struct{}

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
	return &pubQueue{bound: bound, ready: make(chan struct{}, 1), hurry: make(chan struct{}, 1)}
}

// offer queues it unless bounded is set and the queue holds its bound;
// Flush markers are queued past it.
func (q *pubQueue) offer(it *pubItem, bounded bool) bool {
	prompt := it.prompt // once offered, it is the taker's
	q.mu.Lock()
	ok := q.offerLocked(it, bounded)
	q.mu.Unlock()
	if ok {
		q.signal()
		if prompt || q.len() >= lingerUnder {
			wake(q.hurry)
		}
	}
	return ok
}

// offerLocked is offer's part under q.mu, without the wake-up.
func (q *pubQueue) offerLocked(it *pubItem, bounded bool) bool {
	if bounded && q.full() {
		return false
	}
	q.offered = append(q.offered, it)
	q.queued.Add(1)
	if it.prompt {
		q.prompt.Add(1)
	}
	return true
}

// signal wakes the taker unless a signal is already waiting.
func (q *pubQueue) signal() { wake(q.ready) }

// wake leaves a signal in ch unless one is already waiting.
func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
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
	if it.prompt {
		q.prompt.Add(-1)
	}
	return it, true
}

// full reports whether the queue holds its bound.
func (q *pubQueue) full() bool { return q.queued.Load() >= int64(q.bound) }

// quiet reports whether every queued item may wait out a quiet round
// and there are fewer than lingerUnder.
func (q *pubQueue) quiet() bool { return q.prompt.Load() == 0 && q.len() < lingerUnder }

// len is how many items are queued.
func (q *pubQueue) len() int { return int(q.queued.Load()) }
