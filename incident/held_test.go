package incident

import (
	"errors"
	"testing"
	"time"
)

// A held moment folds exactly as StateAt does; a moment before the first
// event, or one whose fold needs events the stream discarded, is refused
// with the earliest moment the log can answer for.
func TestHeldStateAtRefusesWhatTheLogNoLongerHolds(t *testing.T) {
	evs := incidentEvents()
	at := incidentT0.Add(2*time.Minute + 10*time.Second)

	st, err := HeldStateAt(t.Context(), memLog(evs, nil, nil), at)
	if err != nil {
		t.Fatalf("a held moment: %v", err)
	}
	full, _, _ := StateAt(t.Context(), memLog(evs, nil, nil), at, false)
	if got, want := viewJSON(t, st, at), viewJSON(t, full, at); got != want {
		t.Fatalf("HeldStateAt differs from StateAt:\n%s\n%s", got, want)
	}

	notHeld := func(t *testing.T, l *Log, at time.Time, earliest time.Time) {
		t.Helper()
		_, err := HeldStateAt(t.Context(), l, at)
		var nh *NotHeldError
		if !errors.As(err, &nh) {
			t.Fatalf("HeldStateAt(%s) = %v, want a NotHeldError", at, err)
		}
		if !nh.Earliest.Equal(earliest) {
			t.Fatalf("earliest %s, want %s (%v)", nh.Earliest, earliest, err)
		}
	}
	t.Run("before the first event", func(t *testing.T) {
		notHeld(t, memLog(evs, nil, nil), incidentT0.Add(-time.Second), incidentT0)
	})
	t.Run("an empty log", func(t *testing.T) {
		notHeld(t, memLog(nil, nil, nil), at, time.Time{})
	})
	// The stream lost events 1..9; a checkpoint taken at 10 and stored at
	// +2m30s covers the loss from then on.
	lost := evs[9:]
	ckpt := checkpointOf(t, evs, 10, incidentT0.Add(150*time.Second))
	t.Run("a lost start, no checkpoint", func(t *testing.T) {
		notHeld(t, memLog(lost, nil, nil), at, time.Time{})
	})
	t.Run("a lost start, before the checkpoint", func(t *testing.T) {
		notHeld(t, memLog(lost, []Checkpoint{ckpt}, nil), at, ckpt.Stored)
	})
	t.Run("a lost start, after the checkpoint", func(t *testing.T) {
		later := incidentT0.Add(4 * time.Minute)
		st, err := HeldStateAt(t.Context(), memLog(lost, []Checkpoint{ckpt}, nil), later)
		if err != nil {
			t.Fatal(err)
		}
		full, _, _ := StateAt(t.Context(), memLog(evs, nil, nil), later, false)
		if got, want := viewJSON(t, st, later), viewJSON(t, full, later); got != want {
			t.Fatalf("from the checkpoint:\n%s\nfull fold:\n%s", got, want)
		}
	})
	if msg := (&NotHeldError{At: incidentT0, Earliest: ckpt.Stored, Why: "x"}).Error(); msg !=
		"the log cannot answer for 2026-11-29T03:11:23Z: x; the earliest moment it can answer for is 2026-11-29T03:13:53Z" {
		t.Errorf("message %q", msg)
	}
}
