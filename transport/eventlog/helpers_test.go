package eventlog

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
	"github.com/hashicorp/go-hclog"
)

// openTest opens a log and closes it when the test ends.
func openTest(t testing.TB, o Options) *Log {
	t.Helper()
	if o.Logger == nil {
		o.Logger = testkit.Logger(t, hclog.Warn)
	}
	l, err := Open(testkit.Context(t), o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return l
}

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// outcomeEvent is a realistic outcome; i makes it distinct.
func outcomeEvent(i int) domain.Event {
	return domain.Event{
		Kind: domain.KindOutcomeRecorded,
		At:   t0.Add(time.Duration(i) * time.Millisecond),
		Outcome: &domain.Outcome{
			Credential: fmt.Sprintf("cred-%02d", i%16),
			Model:      "meta-llama/Llama-3.1-70B",
			Status:     429,
			Class:      domain.ClassRateLimited,
			LatencyMS:  int64(100 + i%900),
			Attempt:    1 + i%3,
			RequestID:  fmt.Sprintf("req-%08d", i),
		},
	}
}

func banEvent(id, cred, model string) domain.Event {
	until := t0.Add(time.Hour)
	return domain.Event{
		Kind: domain.KindBanImposed,
		ID:   id,
		At:   t0,
		Ban: &domain.Ban{
			Credential: cred, Model: model, Origin: domain.OriginFail2Ban,
			ErrorCode: 429, Since: t0, Until: &until, Failures: 3, CauseSeq: 7,
		},
	}
}

// readAll returns every stored event.
func readAll(t testing.TB, l *Log) []domain.Event {
	t.Helper()
	var evs []domain.Event
	err := l.Read(testkit.Context(t), 0, 0, func(ev domain.Event, _ uint64) error {
		evs = append(evs, ev)
		return nil
	})
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return evs
}

// waitEvents receives n events from ch, failing the test if they stop
// coming.
func waitEvents(t testing.TB, ch <-chan domain.Event, n int) []domain.Event {
	t.Helper()
	out := make([]domain.Event, 0, n)
	for len(out) < n {
		out = append(out, testkit.Receive(t, fmt.Sprintf("event %d of %d", len(out)+1, n), ch))
	}
	return out
}

// checkLogOrder fails the test unless evs are what was published as
// outcomeEvent(0..n-1): every one exactly once, each pair's in publishing
// order (the publisher batches per pair, so pairs may interleave
// differently), at strictly increasing positions whose indices count up
// from 0 within each message. It returns how many messages carried them.
func checkLogOrder(t testing.TB, evs []domain.Event, n int) (messages int) {
	t.Helper()
	if len(evs) != n {
		t.Fatalf("%d events, want %d", len(evs), n)
	}
	seen := make([]bool, n)
	lastOfPair := map[string]int{}
	var prev domain.Pos
	for _, ev := range evs {
		pos := ev.Pos()
		if !prev.Before(pos) || (pos.Index > 0 && pos != (domain.Pos{Seq: prev.Seq, Index: prev.Index + 1})) ||
			(pos.Index == 0 && pos.Seq == prev.Seq) {
			t.Fatalf("position %v follows %v", pos, prev)
		}
		if pos.Index == 0 {
			messages++
		}
		prev = pos
		var i int
		if ev.Outcome == nil || ev.V != domain.SchemaVersion {
			t.Fatalf("event at %v = %+v", pos, ev)
		}
		if _, err := fmt.Sscanf(ev.Outcome.RequestID, "req-%08d", &i); err != nil || i < 0 || i >= n || seen[i] {
			t.Fatalf("event at %v is %q: unknown or repeated", pos, ev.Outcome.RequestID)
		}
		seen[i] = true
		want := outcomeEvent(i)
		if *ev.Outcome != *want.Outcome || !ev.At.Equal(want.At) {
			t.Fatalf("event at %v = %+v, want %+v", pos, *ev.Outcome, *want.Outcome)
		}
		if last, ok := lastOfPair[ev.Outcome.Credential]; ok && last > i {
			t.Fatalf("%s: event %d after event %d", ev.Outcome.Credential, i, last)
		}
		lastOfPair[ev.Outcome.Credential] = i
	}
	return messages
}

// publishAndFlush publishes outcomeEvent(from) to outcomeEvent(to-1) and
// waits until they are stored.
func publishAndFlush(t testing.TB, l *Log, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if !l.Publish(outcomeEvent(i)) {
			t.Fatalf("Publish %d refused", i)
		}
	}
	if err := l.Flush(testkit.Context(t)); err != nil {
		t.Fatal(err)
	}
}

// publishOutcomesOneByOne is publishAndFlush with each event in a round of
// its own, so each is a message of its own at the next sequence.
func publishOutcomesOneByOne(t testing.TB, l *Log, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		publishAndFlush(t, l, i, i+1)
	}
}
