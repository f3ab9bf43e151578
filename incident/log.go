// Package incident holds the operators' tools for reviewing an incident over
// the event log: walking a log, filters, the human timeline, the JSONL
// export format, folding the log to a moment, and following the live log.
//
// The tools reach a log only through the small ports below, so they run the
// same over a NATS stream, a copy of a store directory, an exported file or
// a list of events in a test. A port's implementation that needs NATS lives
// with the command that opens the log; the exported file is read here
// (File). It imports only domain, eventjson and projections: never NATS,
// config or the HTTP surfaces (views are rendered through the Renderer
// port). It is the end of an event's path for an operator: events come
// from the log through a Source or a Follower and end as timeline lines,
// export lines or a view at a moment; nothing here publishes.
package incident

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/airouter/airouter/domain"
)

// Source walks a log's events.
type Source interface {
	// Events calls fn for every event from sequence from on, in log
	// order, until the end of the log as it was when the walk began.
	// Events this version cannot read arrive with an empty Kind and only
	// their position set. When fn returns an error the walk ends with it.
	Events(ctx context.Context, from uint64, fn func(domain.Event) error) error
}

// CheckpointStore lists the projection checkpoints stored with a log.
type CheckpointStore interface {
	Checkpoints(ctx context.Context) ([]Checkpoint, error)
}

// TimeIndex finds events by the time the log stored them.
type TimeIndex interface {
	// SeqAt is the sequence of the first event stored at or after t, or
	// the log's last sequence plus one when there is none.
	SeqAt(ctx context.Context, t time.Time) (uint64, error)
}

// Follower delivers the events stored from now on.
type Follower interface {
	// Follow calls fn, one call at a time, for each event stored after
	// the subscription is in place (only bans and unbans with bansOnly);
	// pending is how many more are known to be waiting. stop ends it.
	Follow(ctx context.Context, bansOnly bool, fn func(ev domain.Event, pending uint64)) (stop func(), err error)
}

// Checkpoint is one stored projection checkpoint.
type Checkpoint struct {
	// Seq is the sequence the state was taken at.
	Seq uint64
	// Data is the checkpoint as projections.State.MarshalCheckpoint wrote it.
	Data []byte
	// Stored is when the checkpoint was stored: by then the writer had
	// applied every event up to Seq.
	Stored time.Time
}

// Log is the log a tool reads: its events and, when the log keeps them,
// its checkpoints and its time index.
type Log struct {
	// Source walks the log's events. Required.
	Source Source
	// Checkpoints is nil when the log keeps none (an exported file).
	Checkpoints CheckpointStore
	// Index is nil when the log has none: a walk from a time then starts
	// at the log's beginning.
	Index TimeIndex
	// Name names the log in notes: "events.nats_url", "incident.jsonl".
	Name string
	// Notes receives notes about what a walk could not include; nil
	// drops them.
	Notes io.Writer
}

// ErrStop ends a walk early without an error.
var ErrStop = errors.New("stop reading")

// SeekMargin covers the difference between an event's own time and the
// time the log stored it (a replica's clock running ahead of the server's):
// a walk from time t starts at events stored a minute before t, and one up
// to time u stops at the first event stamped a minute after u.
const SeekMargin = time.Minute

// Walk calls fn for every event from sequence from on, in log order, as
// Source.Events does; fn returning ErrStop ends the walk without an error.
//
// A walk from the start of a log whose first event is not at position 1
// (older events were discarded by the stream's limits, or a file is an
// export of a window) notes it: state from before then is missing.
func (l *Log) Walk(ctx context.Context, from uint64, fn func(domain.Event) error) error {
	first := from <= 1
	err := l.Source.Events(ctx, from, func(ev domain.Event) error {
		if first {
			first = false
			if ev.Seq > 1 && l.Notes != nil {
				fmt.Fprintf(l.Notes, "note: %s starts at log position %d: state from before it (counters, bans imposed earlier) is not included\n", l.Name, ev.Seq)
			}
		}
		return fn(ev)
	})
	if errors.Is(err, ErrStop) {
		return nil
	}
	return err
}

// SeqSince is where a walk for the events from time t may start: the first
// event stored at or after t less SeekMargin. Without a bound or an index it
// is the log's start.
func (l *Log) SeqSince(ctx context.Context, t time.Time) (uint64, error) {
	if l.Index == nil || t.IsZero() {
		return 0, nil
	}
	return l.Index.SeqAt(ctx, t.Add(-SeekMargin))
}

// Sink is what a walk over the log writes events to: a Timeline or a JSONL
// export.
type Sink interface {
	// Add takes the next event in log order. It returns the first error
	// writing failed with, so a walk stops when no one reads any more.
	Add(ev domain.Event) error
	// Flush writes buffered output out.
	Flush() error
	// Finish writes what is pending and reports a write error.
	Finish() error
}

// Copy writes the events of l from sequence from on that keep passes to
// sink, and stops once the walk is past keep's window. It finishes the sink
// whatever the walk's end.
func Copy(ctx context.Context, l *Log, from uint64, keep Filter, sink Sink) error {
	err := l.Walk(ctx, from, func(ev domain.Event) error {
		if ev.Kind != "" && keep.Past(ev) {
			return ErrStop
		}
		return sink.Add(ev)
	})
	return errors.Join(err, sink.Finish())
}
