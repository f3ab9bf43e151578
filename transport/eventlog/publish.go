package eventlog

import (
	"context"
	"errors"
	"fmt"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/eventjson"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// pubItem is one queued event, a batch of them on their way to the client
// (events > 1, see batch.go), or a Flush marker (flushed != nil). A queued
// outcome names its pair instead of its subject: the publisher goroutine
// looks the subject up (subjectCache), off the request path. prompt marks
// an item its round should not hold past lingerDelay (publisher.linger).
type pubItem struct {
	subject string
	pair    domain.Key
	data    []byte
	events  int
	prompt  bool
	flushed chan struct{}
	ctx     context.Context
}

// publish queues ev and never blocks (Log.Publish).
func (p *publisher) publish(ev domain.Event) bool { return p.offer(ev, false) }

// publishPrompt is publish with ev's round not held past lingerDelay
// (Log.PublishPrompt).
func (p *publisher) publishPrompt(ev domain.Event) bool { return p.offer(ev, true) }

// offer encodes ev and queues it, prompt or as its kind says (encodeItem).
func (p *publisher) offer(ev domain.Event, prompt bool) bool {
	if p.closing.Load() || p.queue.full() { // offer checks again; this spares the encoding
		p.counts.dropped.Add(1)
		return false
	}
	it, _ := p.items.Get().(*pubItem)
	if it == nil {
		it = new(pubItem)
	}
	if err := encodeItem(it, ev); err != nil {
		p.counts.rejected.Add(1)
		p.errs.set(err)
		return false
	}
	it.prompt = it.prompt || prompt
	if !p.queue.offer(it, true) {
		p.counts.dropped.Add(1)
		return false
	}
	return true
}

// encodeItem fills it with ev, encoded into it's buffer.
func encodeItem(it *pubItem, ev domain.Event) error {
	if err := ev.Valid(); err != nil {
		return fmt.Errorf("publish event: %w", err)
	}
	data, err := eventjson.Append(it.data[:0], ev)
	if err != nil {
		return fmt.Errorf("encode %s event: %w", ev.Kind, err)
	}
	*it = pubItem{data: data, events: 1, prompt: true}
	if ev.Kind == domain.KindOutcomeRecorded {
		it.pair = ev.Outcome.Key()
		it.prompt = !ev.Outcome.Success()
	} else {
		it.subject = Subject(ev)
	}
	return nil
}

// maxReusedItem bounds the buffer of an item kept for reuse, so one large
// event does not stay resident.
const maxReusedItem = 1 << 10

// reuse keeps an item the batch has copied out for a later publish.
func (p *publisher) reuse(it *pubItem) {
	if cap(it.data) > maxReusedItem {
		return
	}
	*it = pubItem{data: it.data[:0]}
	p.items.Put(it)
}

// maxCachedSubjects bounds the publisher's subject cache; past it the
// cache starts over.
const maxCachedSubjects = 4096

// subjectCache maps pairs to their outcome subjects. The publisher
// goroutine owns it.
type subjectCache map[domain.Key]string

// resolve sets it's subject from its pair when it has none.
func (c *subjectCache) resolve(it *pubItem) {
	if it.subject != "" || it.flushed != nil {
		return
	}
	if s, ok := (*c)[it.pair]; ok {
		it.subject = s
		return
	}
	if *c == nil || len(*c) >= maxCachedSubjects {
		*c = make(subjectCache)
	}
	it.subject = pairSubject("outcome.", it.pair.Credential, it.pair.Model)
	(*c)[it.pair] = it.subject
}

// flush waits until every event queued before the call is settled
// (Log.Flush).
func (p *publisher) flush(ctx context.Context) error {
	if p.closing.Load() {
		return errors.New("flush events: the event log is closed")
	}
	it := pubItem{flushed: make(chan struct{}), ctx: ctx, prompt: true}
	p.queue.offer(&it, false)
	select {
	case <-it.flushed:
		if ctx.Err() != nil {
			return fmt.Errorf("flush events: %w", ctx.Err())
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("flush events: %w", ctx.Err())
	case <-p.done:
		return errors.New("flush events: the event log closed before the flush finished")
	}
}

// publishAsync hands it to the NATS client, waiting while the log does not
// take events. it's events are counted in unsent until then.
func (p *publisher) publishAsync(it pubItem) {
	defer p.unsent.Add(-int64(it.events))
	for {
		if !p.waitWritable() {
			p.counts.dropped.Add(uint64(it.events))
			return
		}
		_, err := p.conn.cur().js.PublishAsync(it.subject, it.data)
		if err == nil {
			return
		}
		// Too many unacknowledged publishes: the server is slow. Wait
		// again (the queue absorbs the stall and drops beyond it) unless
		// stop has given up.
		if errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
			select {
			case <-p.abort:
			default:
				continue
			}
		}
		p.counts.failed.Add(uint64(it.events))
		p.errs.set(fmt.Errorf("publish event on %s: %w", it.subject, err))
		return
	}
}

func (p *publisher) asyncAck(_ jetstream.JetStream, m *nats.Msg, ack *jetstream.PubAck) {
	if ack != nil {
		p.conn.mark.note(ack.Sequence)
	}
	if p.conn.external && p.store.clear() {
		p.log.Info("the event log's store takes events again; publishing resumes")
	}
	p.counts.published.Add(uint64(eventsIn(m.Subject, m.Data)))
}
