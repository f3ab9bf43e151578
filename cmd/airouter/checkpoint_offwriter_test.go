package main

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/decisions"
	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
	"github.com/airouter/airouter/projections"
	"github.com/airouter/airouter/transport/eventlog"
)

// The periodic checkpoint is wired as serve wires it, on a real embedded
// log: the engine hands the checkpointer the snapshot published at the
// boundary, the checkpointer marshals and saves it, and the saved bytes
// are those a fresh fold of the log up to the checkpoint's sequence gives
// (successes that only use a record included).
func TestPeriodicCheckpointIsTheFoldAtItsSequence(t *testing.T) {
	ctx := testkit.Context(t)
	l, err := eventlog.Open(ctx, eventlog.Options{StoreDir: t.TempDir(), Storage: eventlog.StorageMemory, Logger: testkit.Logger(t, hclog.Warn)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close(context.Background()) })
	live := projections.NewLive(nil)
	ck, err := decisions.NewCheckpointer(l, testkit.Logger(t, hclog.Warn))
	if err != nil {
		t.Fatal(err)
	}
	e, err := decisions.New(decisions.Config{Log: l, Snapshot: live.Load, Clock: clockwork.NewFakeClock(),
		Checkpoints: ck, CheckpointEvery: 100, Logger: testkit.Logger(t, hclog.Warn)})
	if err != nil {
		t.Fatal(err)
	}
	live.AfterApply, live.AfterPublish = e.AfterApply, e.AfterPublish
	ck.Start(ctx)
	defer func() { ck.Stop(); ck.Wait() }()
	stop, err := l.Consume(ctx, 1, live.Apply)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	// Two rounds of 120 outcomes on the same 21 pairs, mostly successes:
	// the second round's successes only use records the first round's
	// snapshots copied. Every 100 events a checkpoint, so one after each.
	at := time.Date(2026, 9, 21, 10, 0, 0, 0, time.UTC)
	var seq, first uint64
	var data []byte
	for round := range 2 {
		for i := range 120 {
			status := 200
			if round == 0 && i%5 == 0 {
				status = 500
			}
			l.Publish(domain.Event{V: domain.SchemaVersion, Kind: domain.KindOutcomeRecorded,
				At: at.Add(time.Duration(round*120+i) * time.Second),
				Outcome: &domain.Outcome{Credential: fmt.Sprintf("cred-%d", i%3), Model: fmt.Sprintf("model-%d", i%7),
					Status: status, Class: domain.ClassifyStatus(status), Attempt: 1}})
		}
		if err := l.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, fmt.Sprintf("a checkpoint after round %d", round+1), func() bool {
			s, d, ok, err := l.LoadCheckpoint(ctx)
			seq, data = s, d
			return err == nil && ok && s > first
		})
		first = seq
	}
	var events []domain.Event
	if err := l.Read(ctx, 1, 0, func(ev domain.Event, _ uint64) error {
		events = append(events, ev)
		return nil
	}); err != nil || len(events) != 240 {
		t.Fatalf("read %d events back (%v), want 240", len(events), err)
	}
	restored, err := projections.UnmarshalCheckpoint(data)
	if err != nil {
		t.Fatal(err)
	}
	fresh := projections.NewState()
	for _, ev := range events {
		if !restored.Pos().Before(ev.Pos()) { // up to the checkpoint's place in its batch
			fresh = projections.Apply(fresh, ev)
		}
	}
	if fresh.Seq() != seq {
		t.Fatalf("the checkpoint saved at %d holds the state at %s", seq, restored.Pos())
	}
	want, err := fresh.MarshalCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, want) {
		t.Fatalf("the checkpoint at %d is not the fold of the log up to it:\n%s\nwant\n%s", seq, data, want)
	}
}
