package decisions

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

// An outcome that reaches the log long after it happened (held through an
// outage) is decided like any live one, with its own time: the ban ends
// the rule's hour after the failure, not after the moment it was folded.
func TestALateOutcomeStillDecides(t *testing.T) {
	r := newRig(t, nil)
	r.clock.Advance(45 * time.Minute) // the outage the outcomes waited through
	for i := range 3 {
		r.apply(failure(time.Duration(i)*time.Second, "cred-a", "gpt-test"))
	}
	r.engine.Start(context.Background())
	ev := r.log.next(t)
	if ev.Kind != domain.KindBanImposed || ev.ID != "f2b/cred-a/gpt-test/1" {
		t.Fatalf("published %s %q, want the ban f2b/cred-a/gpt-test/1", ev.Kind, ev.ID)
	}
	if want := t0.Add(2*time.Second + time.Hour); ev.Ban.Until == nil || !ev.Ban.Until.Equal(want) {
		t.Fatalf("until = %v, want the third failure's time plus an hour (%v)", ev.Ban.Until, want)
	}
}

// Two replicas fold the same outcomes and decide the same ban; the one
// that publishes second, however much later (past any de-duplication
// window), finds the first copy after the outcome it decided on and
// stores nothing: the log holds the ban once, and the second engine counts
// it as already decided, not as a failure.
func TestTwoReplicasStoreADecisionOnce(t *testing.T) {
	log := newMemLog()
	a, b := newRigOn(t, log, nil), newRigOn(t, log, nil)
	var third domain.Event
	for i := range 3 {
		seq := log.append()
		f := failure(time.Duration(i)*time.Second, "cred-a", "gpt-test")
		a.applyAt(seq, f)
		third = b.applyAt(seq, f)
	}
	a.engine.Start(context.Background())
	if ev := log.next(t); ev.Kind != domain.KindBanImposed {
		t.Fatalf("replica A published %s, want the ban", ev.Kind)
	}
	b.clock.Advance(time.Hour) // B is far behind
	b.engine.Start(context.Background())
	if ev := log.next(t); ev.ID != "f2b/cred-a/gpt-test/1" {
		t.Fatalf("replica B tried %q, want the same ban", ev.ID)
	}
	testkit.Eventually(t, "B to count its copy", func() bool { return b.engine.AlreadyDecided() == 1 })
	bans := 0
	for _, ev := range log.events() {
		if ev.Kind == domain.KindBanImposed {
			bans++
		}
	}
	if bans != 1 {
		t.Fatalf("the log holds %d bans, want 1", bans)
	}
	log.mu.Lock()
	causes := slices.Clone(log.causes)
	log.mu.Unlock()
	if want := []uint64{third.Seq, third.Seq}; !slices.Equal(causes, want) {
		t.Fatalf("the decisions were published with causes %v, want the third failure's %v", causes, want)
	}
	for _, e := range []*Engine{a.engine, b.engine} {
		if e.Failed() != 0 {
			t.Fatalf("failed = %d", e.Failed())
		}
	}
	if a.engine.AlreadyDecided() != 0 {
		t.Fatalf("A counted %d decisions as already made", a.engine.AlreadyDecided())
	}
}
