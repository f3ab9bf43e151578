package eventlog

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// SeqAt returns the sequence of the first event the server stored at or
// after t, or the last sequence plus one when there is none (as
// Reader.SeqAt): where a subscriber to the events from time t starts.
func (l *Log) SeqAt(ctx context.Context, t time.Time) (uint64, error) { return l.conn.seqAt(ctx, t) }

// seqAt is SeqAt for a Log and a Reader: an index lookup, not a scan.
func (c *conn) seqAt(ctx context.Context, t time.Time) (uint64, error) {
	b, err := c.bounds(ctx)
	if err != nil {
		return 0, err
	}
	switch {
	case b.LastSeq == 0:
		return 1, nil
	case !t.After(b.FirstStored):
		return b.FirstSeq, nil
	case t.After(b.LastStored):
		return b.LastSeq + 1, nil
	}
	ctx, cancel := context.WithTimeout(ctx, seekTimeout)
	defer cancel()
	oc, err := c.cur().js.OrderedConsumer(ctx, EventsStream, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartTimePolicy,
		OptStartTime:  &t,
	})
	if err != nil {
		return 0, fmt.Errorf("find the first event stored at %s: %w", t.UTC().Format(time.RFC3339), err)
	}
	defer c.release(oc)
	msg, err := oc.Next(jetstream.FetchContext(ctx))
	if err != nil {
		return 0, fmt.Errorf("find the first event stored at %s: %w", t.UTC().Format(time.RFC3339), err)
	}
	md, err := msg.Metadata()
	if err != nil {
		return 0, fmt.Errorf("find the first event stored at %s: %w", t.UTC().Format(time.RFC3339), err)
	}
	return md.Sequence.Stream, nil
}
