package decisions

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
	"github.com/airouter/airouter/projections"
)

// A live outcome that crosses a Fail2Ban threshold publishes the ban,
// under the id of the failure streak's first outcome, so a retry or a
// second replica deciding the same ban is de-duplicated.
func TestALiveFailureCrossingTheThresholdPublishesTheBan(t *testing.T) {
	r := newRig(t, nil)
	r.apply(failure(0, "cred-a", "gpt-test"))
	r.apply(failure(time.Second, "cred-a", "gpt-test"))
	if n := r.engine.Queued(); n != 0 {
		t.Fatalf("%d decisions after two of three failures", n)
	}
	third := r.apply(failure(2*time.Second, "cred-a", "gpt-test"))
	r.engine.Start(context.Background())

	ev := r.log.next(t)
	if ev.Kind != domain.KindBanImposed || ev.ID != "f2b/cred-a/gpt-test/1" {
		t.Fatalf("published %s %q, want the ban f2b/cred-a/gpt-test/1", ev.Kind, ev.ID)
	}
	b := ev.Ban
	if b.Credential != "cred-a" || b.Model != "gpt-test" || b.Origin != domain.OriginFail2Ban ||
		b.ErrorCode != 500 || b.Failures != 3 || b.CauseSeq != third.Seq {
		t.Fatalf("ban = %+v", b)
	}
	if want := third.At.Add(time.Hour); b.Until == nil || !b.Until.Equal(want) {
		t.Fatalf("until = %v, want the third failure's time plus the rule's hour (%v)", b.Until, want)
	}
	if r.engine.Failed() != 0 || r.engine.Dropped() != 0 {
		t.Fatalf("failed %d, dropped %d", r.engine.Failed(), r.engine.Dropped())
	}
}

// Outcomes at or below the log's last sequence at start were decided
// before this process started: replaying them decides nothing, and Observe
// sees them as not live.
func TestOutcomesAtOrBelowTheBootSequenceAreNotDecided(t *testing.T) {
	var live []bool
	r := newRig(t, func(c *Config) {
		c.BootSeq = 3
		c.Observe = func(_ domain.Event, _ projections.Change, l bool) { live = append(live, l) }
	})
	for i := range 3 {
		r.apply(failure(time.Duration(i)*time.Second, "cred-a", "gpt-test"))
	}
	if n := r.engine.Queued(); n != 0 {
		t.Fatalf("replayed outcomes queued %d decisions", n)
	}
	r.apply(failure(3*time.Second, "cred-a", "gpt-test"))
	if n := r.engine.Queued(); n != 1 {
		t.Fatalf("the first live failure past the threshold queued %d decisions, want 1", n)
	}
	if want := []bool{false, false, false, true}; !slices.Equal(live, want) {
		t.Fatalf("Observe saw live = %v, want %v", live, want)
	}
}

// Observe gets the fold's report of what the event changed.
func TestObserveGetsWhatTheEventChanged(t *testing.T) {
	var got []projections.Change
	r := newRig(t, func(c *Config) {
		c.Observe = func(_ domain.Event, ch projections.Change, _ bool) { got = append(got, ch) }
	})
	r.apply(failure(0, "cred-a", "gpt-test"))
	r.apply(ban("admin-1", "cred-a", "gpt-test", time.Hour))
	if len(got) != 2 || len(got[0].Bans) != 0 || len(got[1].Bans) != 1 ||
		got[1].Bans[0].Kind != projections.BanImposed || got[1].Bans[0].ID != "admin-1" {
		t.Fatalf("Observe saw %+v", got)
	}
}

// A full queue drops the decision, counts it and says so; the writer never
// waits.
func TestAFullQueueDropsAndCounts(t *testing.T) {
	var out testkit.Buffer
	r := newRig(t, func(c *Config) {
		c.Policy.Default.MaxAttempts = 1
		c.Queue = 2
		c.Logger = logTo(&out)
	})
	for _, cred := range []string{"cred-a", "cred-b", "cred-c"} {
		r.apply(failure(0, cred, "gpt-test"))
	}
	if q, d := r.engine.Queued(), r.engine.Dropped(); q != 2 || d != 1 {
		t.Fatalf("queued %d, dropped %d; want 2 and 1", q, d)
	}
	lines := out.Lines("decision queue full; decision dropped")
	if len(lines) != 1 || !strings.Contains(lines[0], "f2b/cred-c/gpt-test/3") {
		t.Fatalf("log lines = %q", lines)
	}
	r.engine.Start(context.Background())
	for _, want := range []string{"f2b/cred-a/gpt-test/1", "f2b/cred-b/gpt-test/2"} {
		if ev := r.log.next(t); ev.ID != want {
			t.Fatalf("published %q, want %q", ev.ID, want)
		}
	}
}

// A ban that has ended is recorded in the log as ban.lifted by expiry once
// the engine's clock passes its until, named after the ban.
func TestAnExpiredBanIsPublishedAsLiftedByExpiry(t *testing.T) {
	r := newRig(t, nil)
	r.apply(ban("admin-1", "cred-a", "gpt-test", time.Minute))
	r.engine.Start(context.Background())
	r.clock.Advance(30 * time.Second) // sweeps that find the ban still active
	r.clock.Advance(30 * time.Second) // the until: the ban has ended
	ev := r.log.next(t)
	if ev.Kind != domain.KindBanLifted || ev.ID != projections.ExpiryID("admin-1") || !ev.At.Equal(t0.Add(time.Minute)) {
		t.Fatalf("published %s %q at %v, want the expiry of admin-1 at its until", ev.Kind, ev.ID, ev.At)
	}
	u := ev.Unban
	if u.Credential != "cred-a" || u.Model != "gpt-test" || u.By != domain.LiftedByExpiry || u.BanID != "admin-1" {
		t.Fatalf("unban = %+v", u)
	}
}

// A failed publish is counted every time and logged at most once per
// FailLogEvery of the engine's clock, with the running count.
func TestAPublishFailureIsCountedAndLoggedOncePerInterval(t *testing.T) {
	var out testkit.Buffer
	r := newRig(t, func(c *Config) {
		c.Policy.Default.MaxAttempts = 1
		c.Logger = logTo(&out)
	})
	r.log.fail, r.log.hold = errors.New("log unreachable"), true
	for _, cred := range []string{"cred-a", "cred-b", "cred-c", "cred-d"} {
		r.apply(failure(0, cred, "gpt-test"))
	}
	r.engine.Start(context.Background())
	for range 3 {
		r.log.next(t)
		r.log.release <- struct{}{}
	}
	r.log.next(t) // the fourth publish: the first three are handled
	const msg = "publishing a decision failed"
	if lines := out.Lines(msg); len(lines) != 1 {
		t.Fatalf("three failures within %v logged %d lines, want 1: %q", FailLogEvery, len(lines), lines)
	}
	if n := r.engine.Failed(); n != 3 {
		t.Fatalf("failed = %d, want 3", n)
	}
	r.clock.Advance(FailLogEvery)
	r.log.release <- struct{}{}
	r.engine.Stop()
	r.engine.Wait()
	lines := out.Lines(msg)
	if len(lines) != 2 || !strings.Contains(lines[1], "failed_total=4") {
		t.Fatalf("after %v more: log lines = %q, want a second one with failed_total=4", FailLogEvery, lines)
	}
	if n := r.engine.Failed(); n != 4 {
		t.Fatalf("failed = %d, want 4", n)
	}
	if evs := r.log.events(); len(evs) != 0 {
		t.Fatalf("the log stored %d events", len(evs))
	}
}

func TestNewReportsMissingDependencies(t *testing.T) {
	_, err := New(Config{})
	if err == nil {
		t.Fatal("New accepted a config without Log, Snapshot and Clock")
	}
	for _, want := range []string{"Log", "Snapshot", "Clock"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

// Stop and Wait are safe on an engine that never started.
func TestStopAndWaitWithoutStart(t *testing.T) {
	r := newRig(t, nil)
	r.engine.Stop()
	r.engine.Wait()
}
