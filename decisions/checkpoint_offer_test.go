package decisions

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
	"github.com/airouter/airouter/projections"
)

// At a checkpoint boundary the writer marshals nothing: the engine waits
// for the next swap and offers the checkpoint of the snapshot just
// published, and the checkpointer makes the bytes on its own goroutine,
// later, while the writer has gone on folding. The snapshot is immutable,
// so the saved bytes are the state's at the offered sequence, not the
// state's now.
func TestTheCheckpointerMarshalsTheSnapshotPublishedAtTheBoundary(t *testing.T) {
	r, ck, store := checkpointRig(t, 3)
	// A backlog: events 1-4 arrive with more pending, so no swap yet.
	for i := range 4 {
		ev := ban("admin-"+string(rune('a'+i)), "cred-a", "gpt-test", time.Hour)
		if i == 3 {
			ev = failure(time.Second, "cred-b", "gpt-test")
		}
		ev.Seq = r.log.append()
		r.live.Apply(ev, 10)
	}
	if n := len(ck.latest); n != 0 {
		t.Fatalf("%d snapshots offered before any swap", n)
	}
	r.live.Flush() // the swap at 4, past the boundary at 3
	offered := testkit.Receive(t, "the offered checkpoint", ck.latest)
	if offered.Seq() != 4 || r.live.Load().Seq() != 4 {
		t.Fatalf("offered the checkpoint at %d; want the snapshot's just published, at 4", offered.Seq())
	}
	want, err := r.live.State().MarshalCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	ck.Offer(offered) // back, as the engine left it

	// The writer goes on before the checkpointer runs.
	r.apply(failure(2*time.Second, "cred-c", "gpt-test"))
	r.apply(failure(3*time.Second, "cred-c", "gpt-test"))
	if n := len(ck.latest); n != 1 {
		t.Fatalf("%d snapshots waiting after 2 events past the boundary, want the one at 4", n)
	}
	ck.Start(context.Background())
	cp := testkit.Receive(t, "a saved checkpoint", store.saved)
	ck.Stop()
	ck.Wait()
	if cp.seq != 4 || !bytes.Equal(cp.data, want) {
		t.Fatalf("saved at %d:\n%s\nwant at 4 the state's checkpoint then:\n%s", cp.seq, cp.data, want)
	}
	st, err := projections.UnmarshalCheckpoint(cp.data)
	if err != nil {
		t.Fatal(err)
	}
	if st.Seq() != 4 || st.Snapshot().Named(domain.Key{Credential: "cred-c", Model: "gpt-test"}) {
		t.Fatalf("the saved checkpoint restores to the state at %d", st.Seq())
	}
	if _, banned := st.Snapshot().Blocked("cred-a", "gpt-test", t0.Add(time.Minute)); !banned {
		t.Fatal("the saved checkpoint lost the ban")
	}
}
