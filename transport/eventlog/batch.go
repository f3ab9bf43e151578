package eventlog

import (
	"bytes"
	"strings"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/eventjson"
)

// Outcome batches. The publisher sends the outcome events it finds queued
// together, per pair, as one message: JSON Lines, one domain.Event a line,
// on the pair's outcome subject. Storing, acknowledging and delivering a
// message costs the log the same whatever it carries, so a batch of n
// outcomes costs about 1/n per event of what single-event messages would.
// When traffic is spread over many pairs a round holds few events of each,
// so the pairs with fewer than mixUnder events in a round go together on
// MixedSubject instead, and the messages of a round follow its events, not
// the pairs they touch. Only outcome subjects carry batches; every other
// message holds exactly one event, and a reader splits a message into lines
// only on an outcome subject. Readers number the events of a message by
// Index (domain.Pos).
const (
	// maxBatchBytes bounds one batch message, well under NATS's default
	// max_payload of 1 MiB; a server that allows less lowers it (batchLimit).
	maxBatchBytes = 64 << 10
	// batchHeadroom is kept free under the server's max_payload for the
	// message's subject and headers.
	batchHeadroom = 1 << 10
	// maxBatchPairs bounds the pairs batched at once; one more pair sends
	// the batches collected so far.
	maxBatchPairs = 1024
	// maxDrain bounds the queued events one round of batching takes, so
	// the publisher also gets to its retry queue under a steady flood.
	maxDrain = 4096
	// mixUnder is the fewest events of a pair in a round that still get
	// a message of their own when other pairs' few go on MixedSubject;
	// mixPairs is how many pairs with fewer it takes to mix them. Below
	// that a round's messages are few enough to cost little, and every
	// outcome stays on its pair's subject.
	mixUnder = 4
	mixPairs = 8
)

// MixedSubject carries the outcomes of several pairs, each with fewer than
// mixUnder in its round: each pair's events in order, one pair after
// another. Its tokens cannot name a pair: EscapeToken writes '~' only
// before two hex digits, or alone for the empty name, or doubled.
const MixedSubject = outcomePrefix + "~mixed.~mixed"

const outcomePrefix = subjectPrefix + "outcome."

// batchable reports whether messages on subject may carry several events.
func batchable(subject string) bool { return strings.HasPrefix(subject, outcomePrefix) }

// eventsIn is how many events a message holds: its JSON Lines on an
// outcome subject (eventjson.Lines), else one.
func eventsIn(subject string, data []byte) int {
	if !batchable(subject) {
		return 1
	}
	return max(eventjson.CountLines(data), 1)
}

// batch collects queued outcome events per subject and hands each batch to
// send. The publisher goroutine owns it. A group keeps its items until it
// is sent: the message's buffer is then allocated once, at its exact size
// (the NATS client keeps it for retries, so every message needs its own),
// and each item goes to done, which may reuse it.
type batch struct {
	send     func(pubItem)
	done     func(*pubItem) // nil: items are dropped
	maxBytes int            // 0: maxBatchBytes
	groups   []batchGroup
	index    map[string]int // subject -> groups index
	mixed    batchGroup     // the few events of several pairs, on MixedSubject
}

// batchLimit is the batch bound for a server that accepts payloads of up
// to maxPayload bytes.
func batchLimit(maxPayload int64) int {
	return int(max(min(maxBatchBytes, maxPayload-batchHeadroom), 1))
}

type batchGroup struct {
	subject string
	items   []*pubItem
	size    int // the message's bytes: the items' data and a '\n' between two
	events  int
}

// add appends it to its subject's group, sending that group first when it
// would grow past maxBatchBytes, and everything first when a new subject
// would pass maxBatchPairs.
func (b *batch) add(it *pubItem) {
	g := b.group(it.subject)
	if g.events > 0 && g.size+1+len(it.data) > b.limit() {
		b.sendGroup(g)
	}
	if g.events > 0 {
		g.size++
	}
	g.items = append(g.items, it)
	g.size += len(it.data)
	g.events += it.events
}

func (b *batch) group(subject string) *batchGroup {
	if i, ok := b.index[subject]; ok {
		return &b.groups[i]
	}
	if len(b.groups) == maxBatchPairs {
		b.flush()
	}
	if b.index == nil {
		b.index = make(map[string]int)
	}
	b.index[subject] = len(b.groups)
	if len(b.groups) < cap(b.groups) {
		// Reuse the item slice a sent group left behind.
		b.groups = b.groups[:len(b.groups)+1]
		g := &b.groups[len(b.groups)-1]
		g.subject = subject
		return g
	}
	b.groups = append(b.groups, batchGroup{subject: subject})
	return &b.groups[len(b.groups)-1]
}

// flush sends every collected batch, in the order their subjects first
// appeared, and empties the collection. When mixPairs or more pairs have
// fewer than mixUnder events, theirs go on MixedSubject, after the others.
func (b *batch) flush() {
	few := 0
	for i := range b.groups {
		if b.groups[i].few() {
			few++
		}
	}
	for i := range b.groups {
		g := &b.groups[i]
		if few >= mixPairs && g.few() {
			b.mix(g)
		} else {
			b.sendGroup(g)
		}
		g.subject = ""
	}
	b.sendGroup(&b.mixed)
	b.groups = b.groups[:0]
	clear(b.index)
}

// few reports whether the group holds events, but fewer than mixUnder.
func (g *batchGroup) few() bool { return g.events > 0 && g.events < mixUnder }

// mix moves g's items to the mixed group, sending that first when they
// would take it past the bound.
func (b *batch) mix(g *batchGroup) {
	m := &b.mixed
	m.subject = MixedSubject
	if m.events > 0 && m.size+1+g.size > b.limit() {
		b.sendGroup(m)
	}
	if m.events > 0 {
		m.size++
	}
	m.items = append(m.items, g.items...)
	m.size += g.size
	m.events += g.events
	clear(g.items)
	g.items, g.size, g.events = g.items[:0], 0, 0
}

// limit is the bound of one message.
func (b *batch) limit() int {
	if b.maxBytes == 0 {
		return maxBatchBytes
	}
	return b.maxBytes
}

func (b *batch) sendGroup(g *batchGroup) {
	if g.events == 0 {
		return
	}
	data := make([]byte, 0, g.size)
	for i, it := range g.items {
		if i > 0 {
			data = append(data, '\n')
		}
		data = append(data, it.data...)
	}
	b.send(pubItem{subject: g.subject, data: data, events: g.events})
	if b.done != nil {
		for _, it := range g.items {
			b.done(it)
		}
	}
	clear(g.items)
	g.items, g.size, g.events = g.items[:0], 0, 0
}

// drain publishes first and whatever else is queued behind it, batching
// outcome events per pair: the order of Publish calls is kept, except that
// outcomes of different pairs queued together are grouped by pair (each
// pair's in order). A Flush marker ends the round after everything queued
// before it was handed to the client, so the flush covers it.
func (p *publisher) drain(first *pubItem) {
	it := first
	for n := 1; ; n++ {
		p.subjects.resolve(it)
		switch {
		case it.flushed != nil:
			p.batch.flush()
			p.handleItem(*it)
			return
		case batchable(it.subject):
			p.batch.add(it)
		default:
			p.batch.flush() // what was queued before it goes first
			p.publishAsync(*it)
		}
		if n == maxDrain {
			break
		}
		next, ok := p.queue.take()
		if !ok {
			break
		}
		it = next
		p.unsent.Add(int64(it.events))
	}
	p.batch.flush()
}

// deliver hands the events of one message to fn: each line of a batch on an
// outcome subject, numbered by Index, else the whole message. pending is
// the consumer's count of messages behind this one; fn gets it plus the
// events still to come in this message, so it is 0 only for the last event
// delivered. It stops early when stopped reports true. With atHead (the
// fold at the stream's head: foldsAtHead) a batch goes to fn in runs of
// foldRun events with a pause (cs.pause) between them; otherwise at once.
func (cs *consumers) deliver(dec *eventjson.Decoder, subject string, data []byte, seq, pending uint64, atHead bool, stopped func() bool, fn func(ev domain.Event, pending uint64)) {
	rest := 0
	if batchable(subject) && bytes.IndexByte(data, '\n') >= 0 {
		rest = eventjson.CountLines(data)
	}
	if rest == 0 { // one event, or nothing usable: a skip marker
		fn(cs.decode(dec, data, domain.Pos{Seq: seq}), pending)
		return
	}
	var index uint32
	eventjson.Lines(data, func(line []byte) bool {
		if stopped() {
			return false
		}
		if atHead && index > 0 && index%foldRun == 0 {
			cs.pause()
			if stopped() {
				return false
			}
		}
		rest--
		fn(cs.decode(dec, line, domain.Pos{Seq: seq, Index: index}), pending+uint64(rest))
		index++
		return true
	})
}

// foldRun is how many events of a batch the consumer hands to the fold back
// to back while it is at the stream's head, about 0.1 ms of folding.
const foldRun = 32

// headLag is how long before it reaches the fold a message may have been
// stored for the fold to count as at the stream's head.
const headLag = 10 * time.Millisecond

// foldsAtHead reports whether the fold pauses between runs of a message
// with pending messages after it on the server, stored at stored, now. The
// server's count alone does not say the fold keeps up: the ordered
// consumer reads ahead, so every message of a burst waiting in the
// client's buffer left the server with nothing after it. A message stored
// headLag or more ago means the fold is behind, and a fold that is behind
// goes on at full speed: a pause lasts up to a millisecond, so pausing
// would let it fall further behind. The store time is the embedded
// server's, on this process's clock.
func foldsAtHead(pending uint64, stored, now time.Time) bool {
	return pending == 0 && now.Sub(stored) < headLag
}

// foldPause is pauseForRequests' sleep: short enough to be over by the time
// the requests waiting have run, long enough not to be over before the
// scheduler has looked at the network.
const foldPause = 5 * time.Microsecond

// pauseForRequests lets the requests that arrived during a run of the fold
// go before the rest of it. A publish reaches the fold through a chain of
// goroutines (the publisher, the embedded server's, the client's) that hand
// the processor on without a gap, and on one processor the runtime polls the
// network only when no goroutine is runnable: a quiet round's batch of a few
// hundred successes would otherwise fold in one run of half a millisecond
// while the requests that arrived meanwhile wait. Sleeping leaves nothing
// runnable, so the scheduler polls the network and runs them first;
// runtime.Gosched would not, since the goroutine it yields is queued ahead
// of the network. With no request waiting the sleep lasts the scheduler's
// shortest wait on the network, up to a millisecond.
func pauseForRequests() { time.Sleep(foldPause) }
