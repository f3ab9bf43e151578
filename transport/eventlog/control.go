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
	seq, _, err := p.publishOnce(ctx, ev, nil)
	return seq, err
}

// publishDecision publishes ev unless the stream holds an event on ev's
// subject after cause (Log.PublishDecision).
func (p *publisher) publishDecision(ctx context.Context, ev domain.Event, cause uint64) (uint64, bool, error) {
	return p.publishOnce(ctx, ev, &cause)
}

// publishOnce publishes ev synchronously with Nats-Msg-Id set to its ID,
// retrying transient failures. With a cause, each attempt first reads the
// last event on ev's subject: one after cause means the decision was
// published already (by a replica, or by this one before), and nothing is
// stored; otherwise the publish expects that event to still be the last
// (Nats-Expected-Last-Subject-Sequence), so a copy stored in between makes
// the server refuse it, and the next attempt reads again. It reports the
// event's sequence (the one found, for a decision already made) and
// whether this call stored it.
func (p *publisher) publishOnce(ctx context.Context, ev domain.Event, cause *uint64) (uint64, bool, error) {
	if ev.ID == "" {
		return 0, false, fmt.Errorf("publish %s event: the event has no ID to deduplicate on", ev.Kind)
	}
	var it pubItem
	err := encodeItem(&it, ev)
	if err != nil {
		return 0, false, err
	}
	it.subject = Subject(ev)
	backoff := controlFirstBackoff
	var last error
	for attempt := 1; attempt <= controlAttempts; attempt++ {
		var seq uint64
		var stored bool
		seq, stored, err = p.controlAttempt(ctx, it, ev.ID, cause)
		if err == nil {
			p.conn.mark.note(seq)
			p.conn.mark.write() // an acknowledged control event is marked at once
			if !durableKind(ev.Kind) {
				return seq, stored, nil
			}
			if _, err := p.conn.syncEvents(); err != nil {
				// Stored, and kept across a crash; only a power loss
				// could still lose it.
				p.errs.set(fmt.Errorf("sync the event store after a control event: %w", err))
				p.log.Warn("syncing the event store after a control event failed", "seq", seq, "error", err)
			}
			return seq, stored, nil
		}
		last = err
		if !retryable(err) || ctx.Err() != nil || attempt == controlAttempts {
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
	return 0, false, err
}

// controlAttempt is one attempt of publishOnce. While disconnected a
// publish would wait in the client's buffer until its timeout; it fails at
// once instead, so a caller learns of an outage in under a second.
func (p *publisher) controlAttempt(ctx context.Context, it pubItem, id string, cause *uint64) (uint64, bool, error) {
	if p.conn.reconnecting() {
		return 0, false, errUnreachable
	}
	if fault := p.store.get(); fault != "" && !p.conn.external {
		// The embedded store's check clears the fault; a publish now
		// would wait out its timeout unanswered.
		return 0, false, fmt.Errorf("%w: %s", errStoreFaulted, fault)
	}
	actx, cancel := context.WithTimeout(ctx, controlAttemptTimeout)
	defer cancel()
	opts := []jetstream.PublishOpt{jetstream.WithMsgID(id)}
	if cause != nil {
		lastSeq, err := p.lastOnSubject(actx, it.subject)
		if err != nil {
			return 0, false, err
		}
		if lastSeq > *cause {
			return lastSeq, false, nil
		}
		opts = append(opts, jetstream.WithExpectLastSequencePerSubject(lastSeq))
	}
	ack, err := p.conn.cur().js.Publish(actx, it.subject, it.data, opts...)
	if err != nil {
		p.reportStoreFull(err)
		return 0, false, err
	}
	if p.conn.external && p.store.clear() {
		p.log.Info("the event log's store takes events again; publishing resumes")
	}
	return ack.Sequence, !ack.Duplicate, nil
}

// lastOnSubject is the stream sequence of the last event stored on
// subject, 0 when there is none (never was, or aged out).
func (p *publisher) lastOnSubject(ctx context.Context, subject string) (uint64, error) {
	m, err := p.conn.cur().events.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the last event on %s: %w", subject, err)
	}
	return m.Sequence, nil
}

// retryable reports whether a failed control attempt is worth another: a
// transport failure, a duplicate still being stored, or a guarded publish
// that found another event stored since it read the subject; not any
// other refusal by the server.
func retryable(err error) bool {
	if errors.Is(err, errStoreFaulted) {
		return false
	}
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return true
	}
	switch apiErr.ErrorCode {
	case errCodeDuplicateInProcess, jetstream.JSErrCodeStreamWrongLastSequence,
		jetstream.JSErrCodeStreamWrongLastSequenceConstant:
		return true
	}
	return false
}
