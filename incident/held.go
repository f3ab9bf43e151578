package incident

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
)

// NotHeldError says that a log cannot be folded exactly to a moment: the
// moment lies before the log's first event, or the events the fold needs
// were discarded by the stream's limits and no checkpoint covers them.
type NotHeldError struct {
	At time.Time
	// Earliest is the earliest moment the log can be folded to exactly;
	// zero when there is none (an empty log, or one that lost its start
	// and keeps no checkpoint after the loss).
	Earliest time.Time
	// Why says what the log lacks.
	Why string
}

func (e *NotHeldError) Error() string {
	msg := fmt.Sprintf("the log cannot answer for %s: %s", Stamp(e.At), e.Why)
	if !e.Earliest.IsZero() {
		msg += "; the earliest moment it can answer for is " + e.Earliest.UTC().Format(time.RFC3339Nano)
	}
	return msg
}

// HeldStateAt is StateAt from the latest checkpoint stored at or before at
// that refuses, with a *NotHeldError, a moment the log does not hold: one
// before its first event (the router had applied nothing from it yet), or
// one whose fold would start at an event the stream no longer stores.
// StateAt answers those too, from what is left; a view served to anyone
// who asks must not.
func HeldStateAt(ctx context.Context, l *Log, at time.Time) (*projections.State, error) {
	var cps []Checkpoint
	if l.Checkpoints != nil {
		var err error
		if cps, err = l.Checkpoints.Checkpoints(ctx); err != nil {
			return nil, err
		}
	}
	state, from := startState(cps, at)
	first, applied := true, 0
	var notHeld *NotHeldError
	err := l.Source.Events(ctx, from, func(ev domain.Event) error {
		if first {
			first = false
			if want := max(from, 1); ev.Seq > want {
				notHeld = &NotHeldError{At: at, Earliest: earliestCovered(cps, ev.Seq),
					Why: fmt.Sprintf("the stream no longer stores the events from position %d to %d", want, ev.Seq-1)}
				return ErrStop
			}
		}
		if afterMoment(ev, at) {
			if from <= 1 && applied == 0 {
				notHeld = &NotHeldError{At: at, Earliest: ev.At, Why: "it is before the log's first event"}
			}
			return ErrStop
		}
		applied++
		state = projections.Apply(state, ev)
		return nil
	})
	if err != nil && !errors.Is(err, ErrStop) {
		return nil, err
	}
	if notHeld == nil && first && from <= 1 {
		// No checkpoint stored by at, and no event: a checkpoint stored
		// later is all the log can start from.
		notHeld = &NotHeldError{At: at, Earliest: earliestCovered(cps, 1), Why: "the log holds no events from then"}
	}
	if notHeld != nil {
		return nil, notHeld
	}
	return state, nil
}

// startState is where a fold to at starts: the latest checkpoint stored at
// or before at that reads back at its own position, and the sequence to
// read on from; else the empty state and the log's start.
func startState(cps []Checkpoint, at time.Time) (*projections.State, uint64) {
	if cp, ok := latestCheckpoint(cps, at); ok {
		if st, err := projections.UnmarshalCheckpoint(cp.Data); err == nil && st.Seq() == cp.Seq {
			return st, st.Pos().ResumeSeq()
		}
	}
	return projections.NewState(), 0
}

// earliestCovered is when the oldest checkpoint a fold can start from was
// stored, given that the stream's first stored event is at firstSeq: one
// whose events from its own message on are stored. Zero for none.
func earliestCovered(cps []Checkpoint, firstSeq uint64) time.Time {
	var out time.Time
	for _, cp := range cps {
		if cp.Seq < firstSeq {
			continue
		}
		if out.IsZero() || cp.Stored.Before(out) {
			out = cp.Stored
		}
	}
	return out
}

// EarliestHeld is Earliest: the admin API's views of the past read it to
// answer 404 naming the earliest moment they can answer for.
func (e *NotHeldError) EarliestHeld() time.Time { return e.Earliest }
