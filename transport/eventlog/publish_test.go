package eventlog

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
	"github.com/hashicorp/go-hclog"
)

func TestPublishConsumeRoundTripInOrder(t *testing.T) {
	l := openTest(t, Options{StoreDir: t.TempDir()})
	const n = 500
	ch := make(chan domain.Event, n)
	stop, err := l.Consume(testkit.Context(t), 0, func(ev domain.Event, _ uint64) { ch <- ev })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	for i := range n {
		if !l.Publish(outcomeEvent(i)) {
			t.Fatalf("Publish %d refused", i)
		}
	}
	messages := checkLogOrder(t, waitEvents(t, ch, n), n)
	if err := l.Flush(testkit.Context(t)); err != nil {
		t.Fatal(err)
	}
	s := l.Stats()
	if s.Published != n || s.Dropped != 0 || s.Failed != 0 || !s.Connected {
		t.Errorf("stats = %+v", s)
	}
	if last, err := l.LastSeq(testkit.Context(t)); err != nil || last != uint64(messages) {
		t.Errorf("LastSeq = %d, %v; the events came in %d messages", last, err, messages)
	}
	// Published in a tight loop while the publisher lingers, the events
	// of each pair travel in batches.
	if messages >= n {
		t.Errorf("%d events took %d messages: nothing was batched", n, messages)
	}
	t.Logf("%d events in %d messages", n, messages)
}

func TestPublishRejectsInvalidEvents(t *testing.T) {
	l := openTest(t, Options{StoreDir: t.TempDir()})
	for _, ev := range []domain.Event{{Kind: "nope"}, {Kind: domain.KindOutcomeRecorded}} {
		if l.Publish(ev) {
			t.Errorf("Publish accepted %+v", ev)
		}
	}
	if s := l.Stats(); s.Rejected != 2 || s.LastError == "" {
		t.Errorf("stats = %+v, want 2 rejected and a last error", s)
	}
}

func TestPublishControlDeduplicatesByID(t *testing.T) {
	l := openTest(t, Options{StoreDir: t.TempDir()})
	ctx := testkit.Context(t)
	l.Publish(outcomeEvent(0))
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	ban := banEvent("ban/c1/gpt-4.1/7", "c1", "gpt-4.1")
	first, err := l.PublishControl(ctx, ban)
	if err != nil {
		t.Fatal(err)
	}
	again, err := l.PublishControl(ctx, ban)
	if err != nil {
		t.Fatal(err)
	}
	if first != 2 || again != first {
		t.Fatalf("seqs = %d then %d, want 2 twice", first, again)
	}
	other, err := l.PublishControl(ctx, banEvent("ban/c1/gpt-4.1/9", "c1", "gpt-4.1"))
	if err != nil || other != 3 {
		t.Fatalf("different ID: seq %d, %v; want 3", other, err)
	}
	evs := readAll(t, l)
	if len(evs) != 3 || evs[1].ID != ban.ID || evs[1].Ban.Model != "gpt-4.1" || evs[1].Seq != 2 {
		t.Fatalf("stored events = %+v", evs)
	}
}

func TestPublishControlNeedsAnID(t *testing.T) {
	l := openTest(t, Options{StoreDir: t.TempDir()})
	if _, err := l.PublishControl(testkit.Context(t), banEvent("", "c1", "m")); err == nil {
		t.Fatal("PublishControl accepted an event without ID")
	}
	if _, err := l.PublishControl(testkit.Context(t), domain.Event{Kind: domain.KindBanImposed, ID: "x"}); err == nil {
		t.Fatal("PublishControl accepted a ban without payload")
	}
}

func TestPublishNeverBlocksWhenTheQueueIsFull(t *testing.T) {
	dir := t.TempDir()
	// No publisher goroutine: nothing drains the queue.
	l, err := openIdle(testkit.Context(t), Options{StoreDir: dir, QueueSize: 8, Logger: testkit.Logger(t, hclog.Warn)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		if !l.Publish(outcomeEvent(i)) {
			t.Fatalf("Publish %d refused with room in the queue", i)
		}
	}
	for i := 8; i < 1000; i++ {
		if l.Publish(outcomeEvent(i)) {
			t.Fatalf("Publish %d accepted with the queue full", i)
		}
	}
	if s := l.Stats(); s.Dropped != 992 || s.Pending != 8 {
		t.Fatalf("stats = %+v, want 992 dropped and 8 pending", s)
	}
	// Now let the publisher run: Close flushes what was queued.
	l.pub.start()
	if err := l.Close(testkit.Context(t)); err != nil {
		t.Fatal(err)
	}
	if l.Publish(outcomeEvent(0)) {
		t.Fatal("Publish accepted an event after Close")
	}
	l = openTest(t, Options{StoreDir: dir})
	if got := len(readAll(t, l)); got != 8 {
		t.Fatalf("stored %d events, want the 8 queued", got)
	}
}

func TestCloseFlushesQueuedEvents(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(testkit.Context(t), Options{StoreDir: dir, Logger: testkit.Logger(t, hclog.Warn)})
	if err != nil {
		t.Fatal(err)
	}
	const n = 5000
	for i := range n {
		if !l.Publish(outcomeEvent(i)) {
			t.Fatalf("Publish %d refused", i)
		}
	}
	if err := l.Close(testkit.Context(t)); err != nil {
		t.Fatal(err)
	}
	if s := l.Stats(); s.Published != n || s.Dropped != 0 || s.Failed != 0 {
		t.Fatalf("stats after Close = %+v", s)
	}
	l = openTest(t, Options{StoreDir: dir})
	checkLogOrder(t, readAll(t, l), n)
}

func TestLossesAreLoggedOncePerInterval(t *testing.T) {
	var buf bytes.Buffer
	var c pubCounters
	var errs lastError
	r := newLossReporter(hclog.New(&hclog.LoggerOptions{Output: &buf}), &c, &errs)
	r.tick()
	if buf.Len() != 0 {
		t.Fatalf("logged without losses: %s", buf.String())
	}
	for range 1000 {
		c.dropped.Add(1)
	}
	c.failed.Add(2)
	errs.set(context.DeadlineExceeded)
	r.tick()
	r.tick()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "dropped=1000") || !strings.Contains(lines[0], "failed=2") ||
		!strings.Contains(lines[0], "deadline exceeded") {
		t.Fatalf("log = %q, want one line with the counts and the last error", buf.String())
	}
}
