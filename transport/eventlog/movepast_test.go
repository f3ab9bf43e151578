package eventlog

import (
	"testing"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

// MovePast on a stream that ends below the sequence removes what it
// stores and makes the next event take the sequence after it, on the real
// server; a consumer asked to start below the move starts at it. On a
// stream at or past the sequence it changes nothing.
func TestMovePastContinuesTheStreamAfterTheSequence(t *testing.T) {
	ctx := testkit.Context(t)
	l := openTest(t, Options{StoreDir: t.TempDir()})
	publishBans(t, l, 5)
	if removed, err := l.MovePast(ctx, 5); err != nil || removed != 0 {
		t.Fatalf("MovePast(5) at last 5: removed %d, %v; want nothing", removed, err)
	}
	if removed, err := l.MovePast(ctx, 40); err != nil || removed != 5 {
		t.Fatalf("MovePast(40): removed %d, %v; want the 5 stored", removed, err)
	}
	if last, err := l.LastSeq(ctx); err != nil || last != 40 {
		t.Fatalf("last sequence %d (%v) after the move, want 40", last, err)
	}
	seq, err := l.PublishControl(ctx, banEvent("after", "cred-x", "m"))
	if err != nil || seq != 41 {
		t.Fatalf("the first event after the move is at %d (%v), want 41", seq, err)
	}
	if got := l.conn.mark.last(); got != 41 {
		t.Errorf("the store's mark is %d, want 41", got)
	}
	if evs := readAll(t, l); len(evs) != 1 || evs[0].ID != "after" {
		t.Fatalf("stored after the move: %+v, want only the new ban", evs)
	}
	got := make(chan domain.Event, 4)
	stop, err := l.Consume(ctx, 1, func(ev domain.Event, _ uint64) { got <- ev })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if ev := testkit.Receive(t, "the event after the move", got); ev.ID != "after" || ev.Pos().Seq != 41 {
		t.Fatalf("a consumer from 1 got %q at %s first, want the new ban at 41", ev.ID, ev.Pos())
	}
}
