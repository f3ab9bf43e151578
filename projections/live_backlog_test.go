package projections

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/internal/testkit"
)

// A backlog swaps less and less often, doubling the interval from
// swapEvery up to maxSwapEvery events, and at once when maxSwapGap has
// passed since the last swap; a WaitFor for a position inside the backlog
// returns while the replay goes on; catching up publishes a snapshot
// equal to a full one of the same state, and the interval starts over.
func TestLiveBacklogSwapsLessOftenYetProgresses(t *testing.T) {
	const n = 260_000
	evs := liveLog(n + 3000)
	clock := clockwork.NewFakeClock()
	live := NewLive(nil)
	live.Clock = clock

	waited := make(chan uint64, 1)
	go func() {
		err := live.WaitFor(testkit.Context(t), 2000)
		if err != nil {
			t.Errorf("WaitFor(2000) inside the backlog: %v", err)
		}
		waited <- live.Load().Seq()
	}()

	var swaps []uint64
	prev := live.Load()
	for i, ev := range evs[:n] {
		pending := uint64(n - 1 - i)
		live.Apply(ev, pending)
		if snap := live.Load(); snap != prev {
			prev = snap
			swaps = append(swaps, snap.Seq())
			switch snap.Seq() {
			case 3000:
				// The writer goes on only once the waiter has returned:
				// WaitFor progresses with the backlog, not at its end.
				if got := testkit.Receive(t, "WaitFor(2000) returning", waited); got < 2000 {
					t.Errorf("WaitFor(2000) returned with the snapshot at %d", got)
				}
			case 127_000:
				clock.Advance(maxSwapGap) // the next swapEvery events end the gap
			}
		}
	}
	want := []uint64{1000, 3000, 7000, 15_000, 31_000, 63_000, 127_000, 128_000, 192_000, 256_000, n}
	if !slices.Equal(swaps, want) {
		t.Fatalf("the backlog swapped at %v, want %v", swaps, want)
	}

	now := at(time.Duration(n) * time.Second)
	full := live.State().Snapshot()
	fold := NewState()
	for _, ev := range evs[:n] {
		fold = Apply(fold, ev)
	}
	got, wantView := string(viewJSON(t, live.Load(), now)), string(viewJSON(t, full, now))
	if got != wantView || string(viewJSON(t, fold.Snapshot(), now)) != wantView {
		t.Fatal("the caught-up snapshot differs from a full snapshot of the same log")
	}
	if err := live.WaitFor(context.Background(), n); err != nil {
		t.Fatalf("WaitFor(%d) once caught up: %v", n, err)
	}

	// Caught up, the interval starts over from swapEvery.
	for i, ev := range evs[n : n+swapEvery] {
		live.Apply(ev, uint64(3000-i))
	}
	if got := live.Load().Seq(); got != n+swapEvery {
		t.Fatalf("a backlog after catching up swapped at %d, want %d", got, n+swapEvery)
	}
}
