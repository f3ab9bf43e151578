package projections

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/domain"
)

// swapEvery is how many events the writer folds, while more are pending,
// before it publishes a snapshot anyway, so readers never lag a long replay
// by much. Publishing copies the records changed since the last snapshot
// and the tree nodes on their paths (persistent.go), so during a backlog
// (start-up folding the log) the interval doubles after each swap, up to
// maxSwapEvery events: nobody routes on a snapshot mid-backlog, and a
// record touched many times between two swaps is copied once. A swap comes
// anyway once maxSwapGap has passed since the last one (checked every
// swapEvery events), so WaitFor callers and /health see the replay
// progress; catching up publishes at once and starts over from swapEvery.
// See BenchmarkLiveReplay.
const (
	swapEvery    = 1000
	maxSwapEvery = 64 * swapEvery
	maxSwapGap   = 100 * time.Millisecond
)

// Live holds the current Snapshot for lock-free readers and the working
// State of the one writer. Apply, Flush and State belong to the writer
// goroutine (the log consumer); Load and WaitFor may be called from any
// goroutine.
type Live struct {
	// AfterApply, when set before the first Apply, runs on the writer
	// goroutine right after each event is folded, with the working state
	// and what the event changed in the ban table (the wiring runs the
	// policy on live outcomes there, and drives ban metrics and log lines
	// from ch). It must not keep s or call Live's writer methods.
	AfterApply func(s *State, ev domain.Event, ch Change)
	// AfterPublish, when set before the first Apply, runs on the writer
	// goroutine right after each swap with the working state and the
	// snapshot just published (the wiring takes a checkpoint of it every
	// so many events, State.CheckpointOf, which the checkpointer marshals
	// on its own goroutine). It must not block, keep s or call Live's
	// writer methods.
	AfterPublish func(s *State, snap *Snapshot)
	// Clock times the swaps of a backlog (maxSwapGap); NewLive sets the
	// real clock, and it may be replaced before the first Apply.
	Clock clockwork.Clock

	state   *State
	snap    atomic.Pointer[Snapshot]
	swapped atomic.Pointer[chan struct{}] // closed, and replaced, on every swap
	// complete is the last stream sequence whose message is wholly in the
	// published snapshot: a snapshot can be published inside a batch.
	complete    atomic.Uint64
	unpublished int
	// every is the current interval between swaps while events are
	// pending: first, from first up to most.
	every, first, most int
	// swappedAt is when the last swap came, on Clock; zero until the
	// first Apply (the Clock may be replaced until then).
	swappedAt time.Time
}

// NewLive starts from s (a fresh state when nil, or one read from a
// checkpoint) and publishes its first snapshot. Live owns s from now on.
// The message of s's last event counts as incomplete (s may end inside a
// batch) until the consumer delivers it again.
func NewLive(s *State) *Live {
	if s == nil {
		s = NewState()
	}
	l := &Live{state: s, Clock: clockwork.NewRealClock(), every: swapEvery, first: swapEvery, most: maxSwapEvery}
	l.snap.Store(s.publish(nil))
	l.complete.Store(max(s.pos.Seq, 1) - 1)
	ch := make(chan struct{})
	l.swapped.Store(&ch)
	return l
}

// Load returns the current snapshot; never nil.
func (l *Live) Load() *Snapshot { return l.snap.Load() }

// Apply folds ev into the working state, runs AfterApply, and publishes a
// new snapshot when no more events are pending (pending is how many the
// consumer knows are still waiting behind ev, the rest of its batch
// included), and while more are pending every swapEvery events, an
// interval that grows as the backlog lasts (see swapEvery). An event at or
// before the applied position (a re-delivery) is ignored and AfterApply
// does not run for it.
// Writer goroutine only.
func (l *Live) Apply(ev domain.Event, pending uint64) {
	if ev.Seq == 0 || l.state.pos.Before(ev.Pos()) {
		var ch Change
		l.state, ch = ApplyReport(l.state, ev)
		if l.AfterApply != nil {
			l.AfterApply(l.state, ev, ch)
		}
		l.unpublished++
	}
	switch {
	case pending == 0:
		// Caught up: ev is the last event of its message.
		l.publish(ev.Seq)
		l.every = l.first
	case l.backlogDue():
		// Within a long replay, perhaps within a batch: the messages
		// before ev's are complete.
		l.publish(max(ev.Seq, 1) - 1)
		l.every = min(2*l.every, l.most)
	}
}

// backlogDue reports whether a swap is due while events are pending: the
// interval's events are unpublished, or, at each first events, maxSwapGap
// has passed since the last swap.
func (l *Live) backlogDue() bool {
	if l.swappedAt.IsZero() {
		l.swappedAt = l.Clock.Now()
	}
	if l.unpublished >= l.every {
		return true
	}
	return l.unpublished > 0 && l.unpublished%l.first == 0 && l.Clock.Since(l.swappedAt) >= maxSwapGap
}

// Flush publishes a snapshot of everything applied so far, counting every
// message applied as complete (the caller knows no more of it is coming).
// Writer goroutine only.
func (l *Live) Flush() { l.publish(l.state.pos.Seq) }

// publish swaps in a snapshot of what was applied since the last one, if
// anything, and records complete; waiters wake when either changed.
func (l *Live) publish(complete uint64) {
	changed := false
	if l.unpublished > 0 {
		l.unpublished = 0
		snap := l.state.publish(l.snap.Load())
		l.snap.Store(snap)
		l.swappedAt = l.Clock.Now()
		changed = true
		if l.AfterPublish != nil {
			l.AfterPublish(l.state, snap)
		}
	}
	if complete > l.complete.Load() {
		l.complete.Store(complete)
		changed = true
	}
	if changed {
		next := make(chan struct{})
		close(*l.swapped.Swap(&next))
	}
}

// State is the writer's working state, for checkpointing. Writer goroutine
// only; it changes with every Apply, so no other goroutine may read it.
func (l *Live) State() *State { return l.state }

// WaitFor returns once a published snapshot holds every event of stream
// message seq and all before it (read-your-writes after publishing an
// event; caught up with the log at start), or with the context's error.
func (l *Live) WaitFor(ctx context.Context, seq uint64) error {
	for {
		swapped := *l.swapped.Load() // before the check, so no swap is missed
		if l.complete.Load() >= seq {
			return nil
		}
		select {
		case <-swapped:
		case <-ctx.Done():
			return fmt.Errorf("wait for log position %d (applied %d): %w", seq, l.snap.Load().Seq(), ctx.Err())
		}
	}
}
