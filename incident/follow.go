package incident

import (
	"context"
	"errors"

	"github.com/airouter/airouter/domain"
)

// Follow feeds the events f stores from now on (only bans and unbans with
// bansOnly) to sink until ctx ends or a write fails; the sink is flushed
// whenever no more events are waiting, so a person sees each one as it
// comes. ready runs once the subscription is in place. The end of ctx is
// not an error.
func Follow(ctx context.Context, f Follower, bansOnly bool, sink Sink, ready func()) error {
	failed := make(chan error, 1)
	stop, err := f.Follow(ctx, bansOnly, func(ev domain.Event, pending uint64) {
		err := sink.Add(ev)
		if err == nil && pending == 0 {
			err = sink.Flush()
		}
		if err != nil {
			select {
			case failed <- err:
			default:
			}
		}
	})
	if err != nil {
		return err
	}
	ready()
	select {
	case <-ctx.Done():
		err = nil
	case err = <-failed:
	}
	stop()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return errors.Join(err, sink.Finish())
}
