package decisions

import (
	"context"
	"testing"
	"time"

	"github.com/airouter/airouter/internal/testkit"
	"github.com/airouter/airouter/projections"
)

// The engine offers a checkpoint every CheckpointEvery applied events; a
// checkpoint still waiting when a newer one comes is replaced, so the
// saver writes the latest.
func TestCheckpointsAreOfferedEveryNEventsAndTheLatestWins(t *testing.T) {
	r, ck, store := checkpointRig(t, 2)
	for i := range 5 {
		r.apply(failure(time.Duration(i)*time.Second, "cred-a", "gpt-test"))
	}
	// Offered at events 2 and 4, before the saver runs: 4 replaced 2.
	ck.Start(context.Background())
	cp := testkit.Receive(t, "a saved checkpoint", store.saved)
	ck.Stop()
	ck.Wait()
	if saves := store.saves(); len(saves) != 1 || cp.seq != 4 {
		t.Fatalf("saved %d checkpoints, the first at %d; want one, at 4", len(saves), cp.seq)
	}
	st, err := projections.UnmarshalCheckpoint(cp.data)
	if err != nil {
		t.Fatal(err)
	}
	if st.Seq() != 4 {
		t.Fatalf("the checkpoint holds the state at %d, want 4", st.Seq())
	}
}

// At shutdown, once the writer has stopped, SaveNow writes the writer's
// state synchronously; a state that holds nothing writes nothing.
func TestSaveNowWritesTheStateAtShutdown(t *testing.T) {
	store := newMemStore()
	ck, err := NewCheckpointer(store, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, nil)
	if err := ck.SaveNow(r.live.State()); err != nil {
		t.Fatal(err)
	}
	if n := len(store.saves()); n != 0 {
		t.Fatalf("an empty state saved %d checkpoints", n)
	}
	r.apply(ban("admin-1", "cred-a", "gpt-test", time.Hour))
	r.apply(failure(time.Second, "cred-b", "gpt-test"))
	if err := ck.SaveNow(r.live.State()); err != nil {
		t.Fatal(err)
	}
	saves := store.saves()
	if len(saves) != 1 || saves[0].seq != 2 {
		t.Fatalf("saves = %+v, want one at 2", saves)
	}
	st, err := projections.UnmarshalCheckpoint(saves[0].data)
	if err != nil {
		t.Fatal(err)
	}
	if _, banned := st.Snapshot().Blocked("cred-a", "gpt-test", t0.Add(time.Minute)); !banned {
		t.Fatal("the saved state lost the ban")
	}
}

func TestNewCheckpointerNeedsAStore(t *testing.T) {
	if _, err := NewCheckpointer(nil, nil); err == nil {
		t.Fatal("NewCheckpointer accepted no store")
	}
}
