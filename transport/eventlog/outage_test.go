package eventlog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/internal/testkit"
)

// While the external NATS is gone, Publish keeps answering at once: the
// queue holds what fits, the rest is dropped, counted and logged, queries
// fail fast, and when NATS is back every held event is stored, none twice.
func TestOutageHoldsEventsUpToTheQueueAndFlushesThem(t *testing.T) {
	ns := testkit.StartNATS(t)
	var logs testkit.Buffer
	l := openTest(t, Options{
		NatsURL: ns.URL(), QueueSize: 8, MaxBytes: 64 << 20,
		Logger: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info}),
	})
	ctx := testkit.Context(t)
	for i := range 3 {
		if !l.Publish(outcomeEvent(i)) {
			t.Fatalf("Publish %d refused while connected", i)
		}
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	ns.Stop()
	testkit.Eventually(t, "the disconnect to be noticed", func() bool { return !l.Stats().Connected })
	if l.Stats().Writable {
		t.Error("Writable while disconnected")
	}
	if _, err := l.LastSeq(ctx); !errors.Is(err, errUnreachable) {
		t.Errorf("LastSeq while disconnected = %v, want %v", err, errUnreachable)
	}
	accepted := 0
	for i := 3; i < 15; i++ {
		if l.Publish(outcomeEvent(i)) {
			accepted++
		}
	}
	// The queue holds 8, and the publisher may hold one more in hand.
	if accepted < 8 || accepted > 9 {
		t.Fatalf("accepted %d of 12 events with a queue of 8", accepted)
	}
	if s := l.Stats(); s.Dropped != uint64(12-accepted) || s.Failed != 0 {
		t.Fatalf("stats while down = %+v, want %d dropped, none failed", s, 12-accepted)
	}
	testkit.Eventually(t, "the drops to be logged", func() bool {
		return strings.Contains(logs.String(), fmt.Sprintf("dropped_total=%d", 12-accepted))
	})

	ns.Start()
	if err := l.Flush(ctx); err != nil {
		t.Fatalf("Flush after NATS came back: %v", err)
	}
	evs := readAll(t, l)
	if len(evs) != 3+accepted {
		t.Fatalf("the stream holds %d events; want the %d accepted", len(evs), 3+accepted)
	}
	seen := map[string]bool{}
	for _, ev := range evs {
		id := ev.Outcome.RequestID
		if seen[id] {
			t.Errorf("event %s stored twice", id)
		}
		seen[id] = true
	}
	if s := l.Stats(); s.Published != uint64(3+accepted) || s.Failed != 0 || !s.Connected || s.Pending != 0 {
		t.Errorf("stats after the outage = %+v", s)
	}
}

// A publish no server answers (the stream has no leader, here: no stream at
// all) is held and sent again once the stream answers: nothing is lost and
// nothing is counted as failed.
func TestUnansweredPublishesAreSentAgainWhenTheStreamAnswers(t *testing.T) {
	l := openTest(t, Options{StoreDir: t.TempDir()})
	ctx := testkit.Context(t)
	if err := l.conn.cur().js.DeleteStream(ctx, EventsStream); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if !l.Publish(outcomeEvent(i)) {
			t.Fatalf("Publish %d refused", i)
		}
	}
	testkit.Eventually(t, "the stream to be marked as not answering", func() bool { return !l.Stats().Writable })
	if s := l.Stats(); s.Failed != 0 || s.Published != 0 {
		t.Fatalf("stats while the stream is gone = %+v", s)
	}
	if _, err := l.conn.ensureStream(ctx, eventsConfig(l.opts)); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	evs := readAll(t, l)
	if len(evs) != 5 {
		t.Fatalf("stored %d events, want 5", len(evs))
	}
	if s := l.Stats(); s.Published != 5 || s.Failed != 0 || s.Dropped != 0 || !l.Stats().Writable {
		t.Errorf("stats = %+v, writable %v", s, l.Stats().Writable)
	}
}

// Closing while NATS is gone does not wait for it: what is queued is
// counted as dropped and Close reports no error.
func TestCloseDuringAnOutageCountsTheQueueAsDropped(t *testing.T) {
	ns := testkit.StartNATS(t)
	l, err := Open(testkit.Context(t), Options{NatsURL: ns.URL(), MaxBytes: 64 << 20, Logger: testkit.Logger(t, hclog.Warn)})
	if err != nil {
		t.Fatal(err)
	}
	ns.Stop()
	testkit.Eventually(t, "the disconnect to be noticed", func() bool { return !l.Stats().Connected })
	for i := range 3 {
		l.Publish(outcomeEvent(i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := l.Close(ctx); err != nil {
		t.Fatalf("Close during an outage: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("Close waited for its deadline")
	}
	if s := l.Stats(); s.Dropped != 3 || s.Published != 0 {
		t.Errorf("stats = %+v, want 3 dropped", s)
	}
}
