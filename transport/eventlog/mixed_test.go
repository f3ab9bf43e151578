package eventlog

import (
	"fmt"
	"strings"
	"testing"

	"github.com/airouter/airouter/internal/testkit"
)

// A round with many pairs of few events each sends those pairs' events
// together on MixedSubject, each pair's in order, after the pairs with
// enough for a message of their own; a round with fewer such pairs than
// mixPairs keeps every pair on its own subject.
func TestBatchMixesThePairsWithFewEvents(t *testing.T) {
	pair := func(i int) string { return fmt.Sprintf("%sp%d.m", outcomePrefix, i) }
	busy := outcomePrefix + "busy.m"
	var items []*pubItem
	for n := range mixUnder {
		items = append(items, item(busy, fmt.Sprintf(`{"busy":%d}`, n)))
	}
	for i := range mixPairs {
		items = append(items, item(pair(i), fmt.Sprintf(`{"p":%d}`, i)))
	}
	items = append(items, item(pair(0), `{"p":"0b"}`)) // a second event of p0, after the others
	sent := collectBatch(items...)
	if len(sent) != 2 {
		t.Fatalf("sent %d messages, want the busy pair's and one mixed: %+v", len(sent), sent)
	}
	if sent[0].subject != busy || sent[0].events != mixUnder {
		t.Errorf("first message %s with %d events, want %s with %d", sent[0].subject, sent[0].events, busy, mixUnder)
	}
	lines := []string{`{"p":0}`, `{"p":"0b"}`}
	for i := 1; i < mixPairs; i++ {
		lines = append(lines, fmt.Sprintf(`{"p":%d}`, i))
	}
	if m := sent[1]; m.subject != MixedSubject || string(m.data) != strings.Join(lines, "\n") || m.events != mixPairs+1 {
		t.Errorf("mixed message %s %q (%d events), want %s %q (%d)", m.subject, m.data, m.events, MixedSubject, strings.Join(lines, "\n"), mixPairs+1)
	}
	if got := eventsIn(sent[1].subject, sent[1].data); got != mixPairs+1 {
		t.Errorf("eventsIn(the mixed message) = %d, want %d", got, mixPairs+1)
	}

	few := collectBatch(items[mixUnder : mixUnder+mixPairs-1]...)
	if len(few) != mixPairs-1 {
		t.Fatalf("%d pairs of one event went out as %d messages, want one each", mixPairs-1, len(few))
	}
	for i, m := range few {
		if m.subject != pair(i) {
			t.Errorf("message %d on %s, want %s", i, m.subject, pair(i))
		}
	}
}

// Mixed messages keep within the bound too, and lose nothing.
func TestMixedMessagesStayWithinTheBound(t *testing.T) {
	var sent []pubItem
	b := batch{send: func(it pubItem) { sent = append(sent, it) }, maxBytes: 100}
	const pairs = 3 * mixPairs
	for i := range pairs {
		b.add(item(fmt.Sprintf("%sp%d.m", outcomePrefix, i), fmt.Sprintf(`{"pad":"%020d"}`, i)))
	}
	b.flush()
	events := 0
	for _, m := range sent {
		if m.subject != MixedSubject || len(m.data) > 100 {
			t.Errorf("message on %s of %d bytes, want %s within 100", m.subject, len(m.data), MixedSubject)
		}
		events += m.events
	}
	if len(sent) < 2 || events != pairs {
		t.Fatalf("%d events in %d messages, want %d in several", events, len(sent), pairs)
	}
}

// Outcomes of a round spread over many pairs reach the stream as one mixed
// message and are read back whole, each with its own pair.
func TestSpreadOutcomesAreStoredMixedAndReadWhole(t *testing.T) {
	l := openTest(t, Options{StoreDir: t.TempDir()})
	const n = 32 // outcomeEvent spreads them over 16 credentials: 2 a pair
	// Queued under the queue's lock, so the publisher takes them in one
	// round however the goroutines are scheduled.
	q := l.pub.queue
	q.mu.Lock()
	for i := range n {
		it := new(pubItem)
		if err := encodeItem(it, outcomeEvent(i)); err != nil {
			q.mu.Unlock()
			t.Fatal(err)
		}
		q.offerLocked(it, false)
	}
	q.mu.Unlock()
	q.signal()
	if err := l.Flush(testkit.Context(t)); err != nil {
		t.Fatal(err)
	}
	last, err := l.LastSeq(testkit.Context(t))
	if err != nil || last != 1 {
		t.Fatalf("LastSeq = %d, %v; want the 16 pairs' outcomes in one message", last, err)
	}
	evs := readAll(t, l)
	if len(evs) != n {
		t.Fatalf("read %d events, want %d", len(evs), n)
	}
	for _, ev := range evs {
		var i int
		if _, err := fmt.Sscanf(ev.Outcome.RequestID, "req-%d", &i); err != nil {
			t.Fatal(err)
		}
		if want := outcomeEvent(i).Outcome; *ev.Outcome != *want {
			t.Errorf("event at %v: %+v, want %+v", ev.Pos(), *ev.Outcome, *want)
		}
	}
}
