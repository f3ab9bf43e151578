package incident

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
)

// WalkTo calls fn for the events of l from sequence from on that the router
// had applied by moment at (every event when at is zero).
//
// The rule: events are taken in log order, up to (not including) the first
// event stamped after at. The log's order is the order the router applied
// events in, and an event is stored after the moment it is stamped with, so
// this prefix is what the router had applied by then. An event stamped at
// or before at that lies behind a later-stamped one (a decision published
// late, a replica whose clock runs ahead) is left out: the router had not
// applied it at that moment either. Events this version cannot read are
// passed on, as the fold counts them.
func (l *Log) WalkTo(ctx context.Context, from uint64, at time.Time, fn func(domain.Event) error) error {
	return l.Walk(ctx, from, func(ev domain.Event) error {
		if afterMoment(ev, at) {
			return ErrStop
		}
		return fn(ev)
	})
}

// afterMoment reports whether ev ends a walk to moment at (WalkTo's rule):
// it is stamped after at. Events this version cannot read carry no stamp
// and never end it; a zero at is no end.
func afterMoment(ev domain.Event, at time.Time) bool {
	return ev.Kind != "" && !at.IsZero() && ev.At.After(at)
}

// StateAt is the projection state the router had at moment at: the fold
// (projections.Apply) of the events WalkTo takes.
//
// With useCheckpoints, the fold starts from the latest checkpoint of the log
// that was stored at or before at, as the router does at start: every event
// up to its position had been applied by then, so the answer is the same
// and only the events after it are read. A checkpoint that does not read
// back at its own position is passed over. StateAt returns the position of
// the checkpoint it started from (0 for none).
func StateAt(ctx context.Context, l *Log, at time.Time, useCheckpoints bool) (*projections.State, uint64, error) {
	state, from, ckptSeq := projections.NewState(), uint64(0), uint64(0)
	if useCheckpoints && l.Checkpoints != nil {
		cps, err := l.Checkpoints.Checkpoints(ctx)
		if err != nil {
			return nil, 0, err
		}
		if st, resume := startState(cps, at); resume > 0 {
			state, from, ckptSeq = st, resume, st.Seq()
		}
	}
	err := l.WalkTo(ctx, from, at, func(ev domain.Event) error {
		state = projections.Apply(state, ev)
		return nil
	})
	return state, ckptSeq, err
}

// latestCheckpoint is the newest checkpoint stored at or before at.
func latestCheckpoint(cps []Checkpoint, at time.Time) (Checkpoint, bool) {
	var best Checkpoint
	found := false
	for _, cp := range cps {
		if !cp.Stored.After(at) && (!found || cp.Seq > best.Seq) {
			best, found = cp, true
		}
	}
	return best, found
}

// View names what replay prints at a moment.
type View string

// The views replay prints at a moment.
const (
	ViewBans   View = "bans"   // GET /api/bans
	ViewHealth View = "health" // GET /health
	ViewState  View = "state"  // projections.StateView: everything the log determines
)

// Valid reports whether v is one of the views.
func (v View) Valid() bool {
	return v == ViewBans || v == ViewHealth || v == ViewState || v == ViewPolicy
}

// Renderer renders the router's own answer for a view (bans, health) over a
// replayed snapshot, as the router served it at moment at: its handlers,
// its configuration, its clock fixed at at.
type Renderer interface {
	Render(snap *projections.Snapshot, at time.Time, view View) ([]byte, error)
}

// PrintView folds l up to at (StateAt, from a checkpoint when there is one)
// and writes the view as the router served it at that moment: bans and
// health and policy (which needs the config's own policy) through r, state
// as projections' own view.
func PrintView(ctx context.Context, l *Log, r Renderer, at time.Time, view View, w io.Writer) error {
	if !view.Valid() {
		return fmt.Errorf("unknown view %q", view)
	}
	state, _, err := StateAt(ctx, l, at, true)
	if err != nil {
		return err
	}
	snap := state.Snapshot()
	var body []byte
	if view == ViewState {
		body, err = json.Marshal(snap.StateView(at))
		body = append(body, '\n')
	} else {
		body, err = r.Render(snap, at, view)
	}
	if err != nil {
		return err
	}
	_, err = w.Write(body)
	return err
}
