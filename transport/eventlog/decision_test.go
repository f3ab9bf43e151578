package eventlog

import (
	"sync"
	"testing"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

// A decision is stored once per cause, whatever its Nats-Msg-Id: a second
// copy (a replica that decides it later than the duplicate window, so
// under an id the server no longer remembers) finds the first on its
// subject after the cause and stores nothing, also after the ban was
// lifted; a decision on a later cause is stored.
func TestPublishDecisionStoresADecisionOncePerCause(t *testing.T) {
	l := openTest(t, Options{StoreDir: t.TempDir()})
	ctx := testkit.Context(t)
	l.Publish(outcomeEvent(0))
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	const cause = 1
	seq, stored, err := l.PublishDecision(ctx, banEvent("f2b/c1/m/1", "c1", "m"), cause)
	if err != nil || !stored || seq != 2 {
		t.Fatalf("first decision: seq %d, stored %v, %v; want 2, stored", seq, stored, err)
	}
	lift := domain.Event{Kind: domain.KindBanLifted, ID: "unban/c1/m", At: t0,
		Unban: &domain.Unban{Credential: "c1", Model: "m", By: domain.LiftedByAdmin, BanID: "f2b/c1/m/1"}}
	if _, err := l.PublishControl(ctx, lift); err != nil {
		t.Fatal(err)
	}
	seq, stored, err = l.PublishDecision(ctx, banEvent("f2b/c1/m/1 (late)", "c1", "m"), cause)
	if err != nil || stored || seq != 2 {
		t.Fatalf("late copy: seq %d, stored %v, %v; want the first one's 2, not stored", seq, stored, err)
	}
	seq, stored, err = l.PublishDecision(ctx, banEvent("f2b/c1/m/4", "c1", "m"), 3)
	if err != nil || !stored || seq != 4 {
		t.Fatalf("a decision on a later outcome: seq %d, stored %v, %v; want 4, stored", seq, stored, err)
	}
	if n := countKind(readAll(t, l), domain.KindBanImposed); n != 2 {
		t.Fatalf("the stream holds %d bans, want 2", n)
	}
}

// Replicas publishing the same decision at the same moment, each under an
// id of its own so that Nats-Msg-Id cannot help, store it once: the
// others' publishes expect a last event on the subject that is no longer
// the last, read again, and find the decision made.
func TestPublishDecisionRacingCopiesStoreOne(t *testing.T) {
	l := openTest(t, Options{StoreDir: t.TempDir()})
	ctx := testkit.Context(t)
	l.Publish(outcomeEvent(0))
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	const copies = 8
	var wg sync.WaitGroup
	storedBy := make(chan int, copies)
	start := make(chan struct{})
	for i := range copies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ev := banEvent("f2b/c1/m/1/copy-"+string(rune('a'+i)), "c1", "m")
			if _, stored, err := l.PublishDecision(ctx, ev, 1); err != nil {
				t.Errorf("copy %d: %v", i, err)
			} else if stored {
				storedBy <- i
			}
		}()
	}
	close(start)
	wg.Wait()
	close(storedBy)
	if n := len(storedBy); n != 1 {
		t.Fatalf("%d copies were stored, want 1", n)
	}
	if n := countKind(readAll(t, l), domain.KindBanImposed); n != 1 {
		t.Fatalf("the stream holds %d bans, want 1", n)
	}
}

func countKind(evs []domain.Event, kind domain.Kind) int {
	n := 0
	for _, ev := range evs {
		if ev.Kind == kind {
			n++
		}
	}
	return n
}
