package eventlog

import (
	"bytes"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/eventjson"
)

// A batch copies its items into one buffer of exactly the message's size
// and only then hands them back: changing an item afterwards changes
// nothing sent.
func TestBatchHandsItsItemsBackOnceCopied(t *testing.T) {
	a, c := outcomePrefix+"a.m", outcomePrefix+"c.m"
	var sent []pubItem
	var back []*pubItem
	b := batch{
		send: func(it pubItem) { sent = append(sent, it) },
		done: func(it *pubItem) {
			back = append(back, it)
			for i := range it.data {
				it.data[i] = 'X'
			}
		},
	}
	items := []*pubItem{item(a, `{"n":1}`), item(c, `{"n":2}`), item(a, `{"n":3}`)}
	for _, it := range items {
		b.add(it)
	}
	if len(back) != 0 {
		t.Fatalf("%d items handed back before their batch was sent", len(back))
	}
	b.flush()
	if len(sent) != 2 || string(sent[0].data) != "{\"n\":1}\n{\"n\":3}" || string(sent[1].data) != `{"n":2}` {
		t.Fatalf("sent %+v", sent)
	}
	for _, m := range sent {
		if cap(m.data) != len(m.data) {
			t.Errorf("a message of %d bytes in a buffer of %d", len(m.data), cap(m.data))
		}
	}
	if len(back) != len(items) {
		t.Fatalf("%d of %d items handed back", len(back), len(items))
	}
	// The next round reuses the groups and their slices, and starts empty.
	sent = nil
	b.add(item(c, `{"n":4}`))
	b.flush()
	if len(sent) != 1 || sent[0].subject != c || string(sent[0].data) != `{"n":4}` || sent[0].events != 1 {
		t.Fatalf("second round sent %+v", sent)
	}
}

// publish encodes into an item the publisher handed back, so a steady
// flow of outcomes allocates no queue entry or buffer of its own. A large
// buffer is not kept.
func TestPublishReusesHandedBackItems(t *testing.T) {
	p := newPublisher(nil, hclog.NewNullLogger(), &lastError{}, 16, clockwork.NewRealClock())
	ev := outcomeEvent(7)
	want, err := eventjson.Encode(ev)
	if err != nil {
		t.Fatal(err)
	}
	// publishTaken publishes ev and takes the entry it queued.
	publishTaken := func() *pubItem {
		t.Helper()
		if !p.publish(ev) {
			t.Fatal("publish refused an event")
		}
		got, ok := p.queue.take()
		if !ok {
			t.Fatal("publish accepted an event the queue does not hold")
		}
		return got
	}
	reused := false
	// sync.Pool may drop a put item (the race detector makes it drop one
	// in four), so a few tries.
	for range 20 {
		it := &pubItem{subject: "old", data: make([]byte, 0, 512), events: 3}
		p.reuse(it)
		got := publishTaken()
		if !bytes.Equal(got.data, want) || got.events != 1 || got.subject != "" || got.pair != ev.Outcome.Key() {
			t.Fatalf("queued %s %q (%d events) for pair %v", got.subject, got.data, got.events, got.pair)
		}
		if got == it {
			reused = true
			if cap(got.data) != 512 {
				t.Fatalf("the reused item's buffer has cap %d, want its own 512", cap(got.data))
			}
			break
		}
	}
	if !reused {
		t.Fatal("publish never reused an item handed back")
	}

	big := &pubItem{data: make([]byte, 0, 2*maxReusedItem)}
	for range 20 {
		p.reuse(big)
		if got := publishTaken(); got == big {
			t.Fatalf("an item with a %d-byte buffer was kept for reuse", cap(big.data))
		}
	}
}
