package eventlog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/nats-io/nats.go/jetstream"
)

// Control publish retries: a few attempts with doubling backoff, each
// bounded, all within the caller's ctx and well within DuplicateWindow.
const (
	controlAttempts       = 5
	controlAttemptTimeout = 2 * time.Second
	controlFirstBackoff   = 50 * time.Millisecond
)

// errCodeDuplicateInProcess is the server's answer when a message with the
// same Nats-Msg-Id is still being stored (a replicated stream, two replicas
// publishing the same decision at once). The retry is answered as a
// duplicate of the stored message, with its sequence.
const errCodeDuplicateInProcess jetstream.ErrorCode = 10158

// publishControl publishes ev synchronously, deduplicated on its ID
// (Log.PublishControl).
func (p *publisher) publishControl(ctx context.Context, ev domain.Event) (uint64, error) {
	if ev.ID == "" {
		return 0, fmt.Errorf("publish %s event: the event has no ID to deduplicate on", ev.Kind)
	}
	it, err := encodeItem(ev)
	if err != nil {
		return 0, err
	}
	it.subject = Subject(ev)
	backoff := controlFirstBackoff
	var last error
	for attempt := 1; attempt <= controlAttempts; attempt++ {
		// While disconnected a publish would wait in the client's buffer
		// until its timeout; fail the attempt at once instead, so a
		// caller learns of an outage in under a second.
		err := errUnreachable
		if !p.conn.reconnecting() {
			actx, cancel := context.WithTimeout(ctx, controlAttemptTimeout)
			var ack *jetstream.PubAck
			ack, err = p.conn.js.Publish(actx, it.subject, it.data, jetstream.WithMsgID(ev.ID))
			cancel()
			if err == nil {
				return ack.Sequence, nil
			}
		}
		last = err
		var apiErr *jetstream.APIError
		if (errors.As(err, &apiErr) && apiErr.ErrorCode != errCodeDuplicateInProcess) || ctx.Err() != nil || attempt == controlAttempts {
			break // the server said no, or no time is left
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		backoff *= 2
	}
	err = fmt.Errorf("publish %s event %q on %s: %w", ev.Kind, ev.ID, it.subject, last)
	p.errs.set(err)
	return 0, err
}
