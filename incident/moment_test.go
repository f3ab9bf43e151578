package incident

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
)

// recorded is a Source that remembers where each walk started.
type recorded struct {
	*events
	froms []uint64
}

func (r *recorded) Events(ctx context.Context, from uint64, fn func(domain.Event) error) error {
	r.froms = append(r.froms, from)
	return r.events.Events(ctx, from, fn)
}

// checkpointOf folds evs up to and including seq and stores the state as a
// checkpoint at stored.
func checkpointOf(t *testing.T, evs []domain.Event, seq uint64, stored time.Time) Checkpoint {
	t.Helper()
	st := projections.NewState()
	for _, ev := range evs {
		if ev.Seq <= seq {
			st = projections.Apply(st, ev)
		}
	}
	data, err := st.MarshalCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	return Checkpoint{Seq: st.Seq(), Data: data, Stored: stored}
}

func viewJSON(t *testing.T, st *projections.State, at time.Time) string {
	t.Helper()
	b, err := json.Marshal(st.Snapshot().StateView(at))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The fold to a moment takes the log in order up to the first event
// stamped after it: an event stamped earlier that lies behind it is left
// out, as the router had not applied it at that moment either.
func TestStateAtStopsAtTheFirstLaterStamp(t *testing.T) {
	evs := incidentEvents()[:6] // seq 6: the third 429 at +42 s
	late := domain.Event{Seq: 7, V: 1, Kind: domain.KindBanImposed, ID: "admin/late", At: incidentT0.Add(10 * time.Second),
		Ban: &domain.Ban{Credential: "cred-b", Model: "gpt-4o", Origin: domain.OriginAdmin, Reason: "admin: late", Since: incidentT0.Add(10 * time.Second), Permanent: true}}
	evs = append(evs, late)
	at := incidentT0.Add(30 * time.Second)
	st, ckpt, err := StateAt(t.Context(), memLog(evs, nil, nil), at, true)
	if err != nil || ckpt != 0 {
		t.Fatalf("StateAt: checkpoint %d, %v", ckpt, err)
	}
	if st.Pos() != (domain.Pos{Seq: 5}) {
		t.Fatalf("folded to %v, want 5 (the last event before the first stamped after %s)", st.Pos(), at)
	}
	if _, banned := st.Snapshot().Blocked("cred-b", "gpt-4o", at); banned {
		t.Fatal("the ban stamped before the moment but stored after a later event is in the fold")
	}
	// A zero moment folds everything.
	var seqs []uint64
	if err := memLog(evs, nil, nil).WalkTo(t.Context(), 0, time.Time{}, func(ev domain.Event) error {
		seqs = append(seqs, ev.Seq)
		return nil
	}); err != nil || len(seqs) != len(evs) {
		t.Fatalf("WalkTo without a moment took %v: %v", seqs, err)
	}
}

// The fold starts from the newest checkpoint stored at or before the
// moment, reads only the events after it, and ends where a full fold does.
func TestStateAtFromACheckpointEqualsAFullFold(t *testing.T) {
	evs := incidentEvents()
	early := checkpointOf(t, evs, 4, incidentT0.Add(4*time.Second))
	mid := checkpointOf(t, evs, 8, incidentT0.Add(55*time.Second))
	later := checkpointOf(t, evs, 12, incidentT0.Add(3*time.Minute+time.Second))
	for _, tc := range []struct {
		name     string
		at       time.Time
		ckpts    []Checkpoint
		wantCkpt uint64
	}{
		{"before every checkpoint", incidentT0.Add(2 * time.Second), []Checkpoint{early, mid, later}, 0},
		{"after two", incidentT0.Add(2 * time.Minute), []Checkpoint{later, early, mid}, 8},
		{"after all", incidentT0.Add(time.Hour), []Checkpoint{early, mid, later}, 12},
		{"unreadable newest", incidentT0.Add(time.Hour), []Checkpoint{early, {Seq: 13, Data: []byte("{"), Stored: later.Stored}}, 0},
		{"at another position than it says", incidentT0.Add(time.Hour), []Checkpoint{{Seq: 9, Data: mid.Data, Stored: mid.Stored}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &recorded{events: &events{evs: evs, ckpts: tc.ckpts}}
			l := &Log{Source: src, Checkpoints: src, Name: "the test log"}
			fromCkpt, ckpt, err := StateAt(t.Context(), l, tc.at, true)
			if err != nil || ckpt != tc.wantCkpt {
				t.Fatalf("started from checkpoint %d (%v), want %d", ckpt, err, tc.wantCkpt)
			}
			// From the checkpoint's message again (Pos.ResumeSeq): the
			// fold ignores the events it already holds.
			if src.froms[0] != tc.wantCkpt {
				t.Fatalf("the walk started at %d, want %d", src.froms[0], tc.wantCkpt)
			}
			full, none, err := StateAt(t.Context(), l, tc.at, false)
			if err != nil || none != 0 {
				t.Fatalf("full fold: checkpoint %d, %v", none, err)
			}
			if fromCkpt.Pos() != full.Pos() {
				t.Fatalf("folded to %v from the checkpoint, %v in full", fromCkpt.Pos(), full.Pos())
			}
			if a, b := viewJSON(t, fromCkpt, tc.at), viewJSON(t, full, tc.at); a != b {
				t.Fatalf("the views differ:\nfrom the checkpoint %s\nfull fold %s", a, b)
			}
		})
	}
	// Without a checkpoint store the fold is a full one.
	st, ckpt, err := StateAt(t.Context(), &Log{Source: &events{evs: evs}}, incidentT0.Add(time.Hour), true)
	if err != nil || ckpt != 0 || st.Seq() != uint64(len(evs)) {
		t.Fatalf("StateAt without checkpoints: %v at %d, checkpoint %d", err, st.Seq(), ckpt)
	}
}

// fakeViews records what it is asked to render.
type fakeViews struct {
	view View
	at   time.Time
	seq  uint64
}

func (f *fakeViews) Render(snap *projections.Snapshot, at time.Time, view View) ([]byte, error) {
	f.view, f.at, f.seq = view, at, snap.Seq()
	return []byte("rendered " + string(view) + "\n"), nil
}

// PrintView renders bans and health through the Renderer over the folded
// snapshot at the moment, and state as projections' own view.
func TestPrintView(t *testing.T) {
	evs := incidentEvents()
	at := incidentT0.Add(2*time.Minute + time.Second)
	for _, v := range []View{ViewBans, ViewHealth} {
		var out bytes.Buffer
		r := &fakeViews{}
		if err := PrintView(t.Context(), memLog(evs, nil, nil), r, at, v, &out); err != nil {
			t.Fatal(err)
		}
		if out.String() != "rendered "+string(v)+"\n" || r.view != v || !r.at.Equal(at) || r.seq != 10 {
			t.Fatalf("view %s: printed %q; rendered %s at %s over seq %d", v, out.String(), r.view, r.at, r.seq)
		}
	}
	var out bytes.Buffer
	if err := PrintView(t.Context(), memLog(evs, nil, nil), nil, at, ViewState, &out); err != nil {
		t.Fatal(err)
	}
	st, _, _ := StateAt(t.Context(), memLog(evs, nil, nil), at, false)
	if want := viewJSON(t, st, at) + "\n"; out.String() != want {
		t.Fatalf("state view:\n%s\nwant:\n%s", out.String(), want)
	}
	if err := PrintView(t.Context(), memLog(evs, nil, nil), nil, at, View("metrics"), &out); err == nil {
		t.Fatal("an unknown view printed")
	}
}
