package eventlog

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// MovePast makes the events stream continue after seq when its last
// sequence is below seq, so no new event takes a sequence a checkpoint at
// seq has already folded (a restored state ignores events at or below its
// own position). It purges the stream keeping from seq+1: on a stream
// whose last sequence is lower, nats-server then removes every stored
// message and sets the first sequence to seq+1, the next one assigned.
// It returns how many stored messages it removed; call it only when the
// caller's state already holds all of them. A stream at or past seq is
// left as it is (0, nil).
func (l *Log) MovePast(ctx context.Context, seq uint64) (removed uint64, err error) {
	c := l.conn
	if c.reconnecting() {
		return 0, fmt.Errorf("move %s past sequence %d: %w", EventsStream, seq, errUnreachable)
	}
	info, err := c.cur().events.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("read %s state: %w", EventsStream, err)
	}
	if info.State.LastSeq >= seq {
		return 0, nil
	}
	if err := c.cur().events.Purge(ctx, jetstream.WithPurgeSequence(seq+1)); err != nil {
		return 0, fmt.Errorf("move %s past sequence %d: %w", EventsStream, seq, err)
	}
	if last, err := c.lastSeq(ctx); err != nil || last != seq {
		return 0, fmt.Errorf("move %s past sequence %d: the stream now ends at %d (%v)", EventsStream, seq, last, err)
	}
	c.mark.note(seq)
	c.mark.write()
	l.cons.moved.Store(seq + 1)
	return info.State.Msgs, nil
}
