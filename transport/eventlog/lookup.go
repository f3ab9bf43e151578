package eventlog

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// streamLookup finds a stream by name without creating it: a JetStream
// context's Stream method.
type streamLookup func(ctx context.Context, name string) (jetstream.Stream, error)

// findStreams looks up the events stream and, when there is one, the
// checkpoints stream, each retried while a cluster elects its leader
// (whileElecting), as opening the log does. A Reader (replay, export,
// tail) and a replacement of a closed connection open the streams this
// way: on a cluster that has just started or lost a leader, a lookup goes
// unanswered for a while instead of failing. where names the log in the
// errors ("" for none). A missing events stream is an error at once; a
// missing checkpoints stream is nil.
func (c *conn) findStreams(ctx context.Context, find streamLookup, where string) (events, ckpts jetstream.Stream, err error) {
	lookup := func(name string, dst *jetstream.Stream) error {
		what := "open stream " + name + where
		err := c.whileElecting(ctx, what, func(ctx context.Context) error {
			s, err := find(ctx, name)
			*dst = s
			return err
		})
		if err != nil && !strings.HasPrefix(err.Error(), what+": ") {
			err = fmt.Errorf("%s: %w", what, err) // whileElecting names what only when it gave up waiting
		}
		return err
	}
	if err := lookup(EventsStream, &events); err != nil {
		return nil, nil, err
	}
	if err := lookup(CheckpointsStream, &ckpts); err != nil {
		if !errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, nil, err
		}
		ckpts = nil
	}
	return events, ckpts, nil
}
