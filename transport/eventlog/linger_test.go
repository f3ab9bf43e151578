package eventlog

import (
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

// pairOutcome is outcomeEvent(i) on one pair, of class (a success is a 200).
func pairOutcome(i int, class domain.Class) domain.Event {
	ev := outcomeEvent(i)
	o := *ev.Outcome
	o.Credential, o.Class = "cred-00", class
	if class == domain.ClassOK {
		o.Status = 200
	}
	ev.Outcome = &o
	return ev
}

func publishAll(t *testing.T, l *Log, evs ...domain.Event) {
	t.Helper()
	for _, ev := range evs {
		if !l.Publish(ev) {
			t.Fatalf("Publish %s at %v refused", ev.Kind, ev.At)
		}
	}
}

// openQuiet opens a log on fc that holds quiet rounds.
func openQuiet(t *testing.T, fc *clockwork.FakeClock) *Log {
	l := openTest(t, Options{StoreDir: t.TempDir(), Clock: fc})
	l.HoldQuietRounds(true)
	return l
}

// heldQuietRound opens a log on fc holding quiet rounds, publishes first
// (successes) and moves the clock past lingerDelay: the round is held.
func heldQuietRound(t *testing.T, fc *clockwork.FakeClock, first ...domain.Event) *Log {
	t.Helper()
	l := openQuiet(t, fc)
	publishAll(t, l, first...)
	lingering(t, fc)
	fc.Advance(lingerDelay)
	lingering(t, fc)
	return l
}

// lingering waits until the publisher waits on the fake clock.
func lingering(t *testing.T, fc *clockwork.FakeClock) {
	t.Helper()
	if err := fc.BlockUntilContext(testkit.Context(t), 1); err != nil {
		t.Fatalf("the publisher never waited: %v", err)
	}
}

func waitPublished(t *testing.T, l *Log, n uint64) {
	t.Helper()
	testkit.Eventually(t, fmt.Sprintf("%d events stored", n), func() bool { return l.Stats().Published >= n })
}

// messagesOf is how many messages carried evs (positions with index 0).
func messagesOf(evs []domain.Event) int {
	n := 0
	for _, ev := range evs {
		if ev.Index == 0 {
			n++
		}
	}
	return n
}

func TestARoundOfSuccessesWaitsUntilAnEventThatMayChangeRouting(t *testing.T) {
	fc := clockwork.NewFakeClock()
	l := heldQuietRound(t, fc, pairOutcome(0, domain.ClassOK))
	if s := l.Stats(); s.Published != 0 || s.Pending != 1 {
		t.Fatalf("after lingerDelay: published %d, pending %d; want the success held", s.Published, s.Pending)
	}
	publishAll(t, l, pairOutcome(1, domain.ClassOK), pairOutcome(2, domain.ClassRateLimited))
	waitPublished(t, l, 3) // the 429 sends the round without the clock moving on
	evs := readAll(t, l)
	if len(evs) != 3 || messagesOf(evs) != 1 {
		t.Fatalf("stored %d events in %d messages, want 3 in one", len(evs), messagesOf(evs))
	}
	for i, ev := range evs {
		if ev.Outcome.RequestID != fmt.Sprintf("req-%08d", i) {
			t.Fatalf("event %d is %s: out of order", i, ev.Outcome.RequestID)
		}
	}
}

func TestARoundOfSuccessesGoesOutAtQuietLinger(t *testing.T) {
	fc := clockwork.NewFakeClock()
	l := heldQuietRound(t, fc, pairOutcome(0, domain.ClassOK), pairOutcome(1, domain.ClassOK))
	fc.Advance(quietLinger - lingerDelay - time.Millisecond)
	lingering(t, fc)
	if s := l.Stats(); s.Published != 0 {
		t.Fatalf("%d stored a millisecond before quietLinger, want the round held", s.Published)
	}
	fc.Advance(time.Millisecond)
	waitPublished(t, l, 2)
	if evs := readAll(t, l); messagesOf(evs) != 1 {
		t.Fatalf("%d messages, want the round in one", messagesOf(evs))
	}
}

func TestARoundWithAnythingButSuccessesGoesOutAtLingerDelay(t *testing.T) {
	for name, c := range map[string]struct {
		evs        []domain.Event
		lastPrompt bool // the last event goes through PublishPrompt
	}{
		"a failure first":          {evs: []domain.Event{pairOutcome(0, domain.ClassServerError)}},
		"a failure after success":  {evs: []domain.Event{pairOutcome(0, domain.ClassOK), pairOutcome(1, domain.ClassTimeout)}},
		"an event of another kind": {evs: []domain.Event{pairOutcome(0, domain.ClassOK), banEvent("b1", "cred-00", "m")}},
		"a prompt success":         {evs: []domain.Event{pairOutcome(0, domain.ClassOK), pairOutcome(1, domain.ClassOK)}, lastPrompt: true},
	} {
		t.Run(name, func(t *testing.T) {
			fc := clockwork.NewFakeClock()
			l := openQuiet(t, fc)
			evs := c.evs
			if c.lastPrompt {
				publishAll(t, l, evs[:len(evs)-1]...)
				if !l.PublishPrompt(evs[len(evs)-1]) {
					t.Fatal("PublishPrompt refused")
				}
			} else {
				publishAll(t, l, evs...)
			}
			lingering(t, fc)
			fc.Advance(lingerDelay)
			waitPublished(t, l, uint64(len(evs)))
		})
	}
}

func TestAQuietRoundEndsOnFlushOrAFullRound(t *testing.T) {
	t.Run("flush", func(t *testing.T) {
		l := heldQuietRound(t, clockwork.NewFakeClock(), pairOutcome(0, domain.ClassOK))
		if err := l.Flush(testkit.Context(t)); err != nil {
			t.Fatal(err)
		}
		if s := l.Stats(); s.Published != 1 {
			t.Fatalf("Flush returned with %d stored, want 1", s.Published)
		}
	})
	t.Run("lingerUnder events", func(t *testing.T) {
		l := heldQuietRound(t, clockwork.NewFakeClock(), pairOutcome(0, domain.ClassOK))
		for i := 1; i <= lingerUnder; i++ {
			publishAll(t, l, pairOutcome(i, domain.ClassOK))
		}
		waitPublished(t, l, lingerUnder+1)
	})
}

func TestTurningQuietRoundsOffSendsAHeldRound(t *testing.T) {
	l := heldQuietRound(t, clockwork.NewFakeClock(), pairOutcome(0, domain.ClassOK))
	l.HoldQuietRounds(false)
	waitPublished(t, l, 1)
}

func TestQuietRoundsAreHeldOnlyWhenAsked(t *testing.T) {
	fc := clockwork.NewFakeClock()
	l := openTest(t, Options{StoreDir: t.TempDir(), Clock: fc})
	publishAll(t, l, pairOutcome(0, domain.ClassOK))
	lingering(t, fc)
	fc.Advance(lingerDelay)
	waitPublished(t, l, 1)
	l.HoldQuietRounds(true)
	l.HoldQuietRounds(false)
	publishAll(t, l, pairOutcome(1, domain.ClassOK))
	lingering(t, fc)
	fc.Advance(lingerDelay)
	waitPublished(t, l, 2)
}
