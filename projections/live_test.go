package projections

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// liveLog is a mixed log over 20 credentials and 10 models.
func liveLog(n int) []domain.Event {
	evs := make([]domain.Event, 0, n)
	for i := 0; i < n; i++ {
		cred, model := fmt.Sprintf("c%d", i%20), fmt.Sprintf("m%d", i%10)
		d := time.Duration(i) * time.Second
		var ev domain.Event
		switch i % 50 {
		case 7:
			ev = autoBan(d, fmt.Sprintf("ban/%d", i), cred, model, 429, 5*time.Minute)
		case 19:
			ev = cooldown(d, cred, model, time.Minute)
		case 31:
			ev = unban(d, cred, "")
		case 43:
			ev = bench(d, model, 2*time.Minute)
		default:
			ev = outcome(d, cred, model, []int{200, 429, 500, 503, 200}[i%5])
		}
		ev.Seq = uint64(i + 1)
		evs = append(evs, ev)
	}
	return evs
}

func TestLiveConcurrentReaders(t *testing.T) {
	evs := liveLog(20000)
	live := NewLive(nil)
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for r := 0; r < 8; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			var last uint64
			for i := 0; !stop.Load(); i++ {
				snap := live.Load()
				if snap == nil {
					errs <- errors.New("Load returned nil")
					return
				}
				if snap.Seq() < last {
					errs <- fmt.Errorf("reader %d saw seq go back from %d to %d", r, last, snap.Seq())
					return
				}
				last = snap.Seq()
				now := at(time.Duration(last) * time.Second)
				snap.Blocked(fmt.Sprintf("c%d", i%20), fmt.Sprintf("m%d", i%10), now)
				snap.Pair(domain.Key{Credential: "c1", Model: "m1"}, now)
				if i%500 == 0 {
					snap.StateView(now)
					snap.Bans(now)
				}
			}
		}(r)
	}
	for i, ev := range evs {
		live.Apply(ev, uint64((len(evs)-i-1)%7)) // swaps often, never on a schedule
	}
	live.Flush()
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := live.Load().Seq(); got != uint64(len(evs)) {
		t.Fatalf("final snapshot at seq %d, want %d", got, len(evs))
	}
	now := at(time.Duration(len(evs)) * time.Second)
	if got, want := viewJSON(t, live.Load(), now), viewJSON(t, fold(evs).Snapshot(), now); string(got) != string(want) {
		t.Fatalf("live view differs from a fresh fold:\n%s\n%s", got, want)
	}
}

func TestLiveWaitFor(t *testing.T) {
	live := NewLive(nil)
	if err := live.WaitFor(context.Background(), 0); err != nil {
		t.Fatalf("WaitFor(0) on a fresh Live: %v", err)
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := live.WaitFor(canceled, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitFor(1) before anything is applied = %v, want context.Canceled", err)
	}

	// Not a timing assertion: a guard so that a broken WaitFor fails the
	// test instead of hanging it.
	guard, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	const target = 500
	done := make(chan error, 4)
	seen := make(chan uint64, 4)
	for w := 0; w < 4; w++ {
		go func() {
			err := live.WaitFor(guard, target)
			seen <- live.Load().Seq()
			done <- err
		}()
	}
	evs := liveLog(1000)
	for i, ev := range evs {
		pending := uint64(len(evs) - i - 1) // a backlog: swaps only every swapEvery or at the end
		if i == target-1 {
			pending = 0 // the consumer caught up here
		}
		live.Apply(ev, pending)
	}
	for w := 0; w < 4; w++ {
		if err := <-done; err != nil {
			t.Fatalf("WaitFor(%d): %v", target, err)
		}
		if s := <-seen; s < target {
			t.Fatalf("WaitFor(%d) returned while the snapshot was at %d", target, s)
		}
	}
	if err := live.WaitFor(guard, 1000); err != nil {
		t.Fatalf("WaitFor(1000) after everything: %v", err)
	}
}

func TestLiveSwapsWhenCaughtUpOrEveryN(t *testing.T) {
	live := NewLive(nil)
	evs := liveLog(2*swapEvery + 10)
	for i, ev := range evs[:swapEvery-1] {
		live.Apply(ev, uint64(len(evs)-i))
	}
	if got := live.Load().Seq(); got != 0 {
		t.Fatalf("swapped at seq %d before %d events with more pending", got, swapEvery)
	}
	live.Apply(evs[swapEvery-1], 99)
	if got := live.Load().Seq(); got != swapEvery {
		t.Fatalf("after %d events the snapshot is at %d", swapEvery, got)
	}
	live.Apply(evs[swapEvery], 0)
	if got := live.Load().Seq(); got != swapEvery+1 {
		t.Fatalf("caught up but the snapshot is at %d", got)
	}
	before := live.Load()
	live.Flush()
	if live.Load() != before {
		t.Fatal("Flush with nothing applied published a new snapshot")
	}
	live.Apply(evs[swapEvery+1], 5)
	live.Flush()
	if got := live.Load().Seq(); got != swapEvery+2 {
		t.Fatalf("Flush left the snapshot at %d", got)
	}
}

func TestLiveAfterApply(t *testing.T) {
	live := NewLive(nil)
	var calls []string
	live.AfterApply = func(s *State, ev domain.Event, ch Change) {
		f := s.Facts(ev)
		calls = append(calls, fmt.Sprintf("%d:%d", ev.Seq, f.Counts[429]))
		for _, c := range ch.Bans {
			calls = append(calls, fmt.Sprintf("%s:%s", c.Kind, c.ID))
		}
	}
	evs := numbered(outcome(0, "a", "gpt", 429), outcome(m, "a", "gpt", 429), bench(m, "gpt", m),
		autoBan(m, "b1", "a", "gpt", 429, m))
	live.Apply(evs[0], 1)
	live.Apply(evs[1], 1)
	live.Apply(evs[1], 0) // re-delivered: not folded, no hook, but the backlog is published
	if got := live.Load().Seq(); got != 2 {
		t.Fatalf("after a re-delivery with nothing pending the snapshot is at %d, want 2", got)
	}
	live.Apply(evs[2], 1)
	live.Apply(evs[3], 0)
	if got := join(calls); got != "1:1 2:2 3:0 4:0 imposed:b1" {
		t.Fatalf("AfterApply saw %s, want the state and the ban changes right after each new event", got)
	}
}

func TestLiveFromCheckpoint(t *testing.T) {
	evs := liveLog(300)
	data, err := fold(evs[:200]).MarshalCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	s, err := UnmarshalCheckpoint(data)
	if err != nil {
		t.Fatal(err)
	}
	live := NewLive(s)
	if live.Load().Seq() != 200 || live.State() != s {
		t.Fatalf("Live from a checkpoint starts at seq %d", live.Load().Seq())
	}
	for _, ev := range evs { // the replay overlaps the checkpoint
		live.Apply(ev, 0)
	}
	now := at(300 * time.Second)
	if got, want := viewJSON(t, live.Load(), now), viewJSON(t, fold(evs).Snapshot(), now); string(got) != string(want) {
		t.Fatalf("checkpoint + overlapping replay differs from a full replay:\n%s\n%s", got, want)
	}
}

// WaitFor(seq) means every event of message seq is in the published
// snapshot: a snapshot published inside a batch (every N events) does not
// count for its message, and a state restored inside a batch waits for the
// batch to be delivered again.
func TestLiveWaitForWholeBatches(t *testing.T) {
	at := func(ev domain.Event, seq uint64, index uint32) domain.Event {
		ev.Seq, ev.Index = seq, index
		return ev
	}
	batch := []domain.Event{
		at(outcome(0, "a", "gpt", 500), 5, 0),
		at(outcome(0, "a", "gpt", 500), 5, 1),
		at(outcome(0, "a", "gpt", 500), 5, 2),
	}
	done := func(l *Live, seq uint64) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		return l.WaitFor(ctx, seq) == nil
	}
	l := NewLive(nil)
	l.every, l.first, l.most = 1, 1, 1 // publish after every event, inside the batch too
	l.Apply(batch[0], 2)
	l.Apply(batch[1], 1)
	if l.Load().Pos() != (domain.Pos{Seq: 5, Index: 1}) || done(l, 5) || !done(l, 4) {
		t.Fatalf("inside the batch at %v: WaitFor(5) returned, or WaitFor(4) did not", l.Load().Pos())
	}
	l.Apply(batch[2], 0)
	if !done(l, 5) {
		t.Fatal("WaitFor(5) after the whole batch did not return")
	}

	// Restored at 5.1, the batch delivered again from its start.
	mid := NewState()
	mid = Apply(mid, batch[0])
	mid = Apply(mid, batch[1])
	r := NewLive(mid)
	if done(r, 5) {
		t.Fatal("a state restored inside message 5 counts it as whole")
	}
	r.Apply(batch[0], 2)
	r.Apply(batch[1], 1)
	r.Apply(batch[2], 0)
	if !done(r, 5) || r.Load().StateView(time.Time{}).Pairs[0].ErrorCodeCounts["500"] != 3 {
		t.Fatalf("after the batch again: %+v", r.Load().StateView(time.Time{}).Pairs)
	}
}
