package replicas

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

var t0 = time.Date(2026, 9, 21, 10, 0, 0, 0, time.UTC)

func heartbeat(at time.Duration, replica, instance, fp string) domain.Event {
	return domain.Event{V: domain.SchemaVersion, Kind: domain.KindReplicaHeartbeat, At: t0.Add(at),
		Heartbeat: &domain.Heartbeat{Replica: replica, Instance: instance, PolicyFingerprint: fp}}
}

// The replicas heard from in the last SeenFor are listed by id with their
// latest heartbeat; an older heartbeat delivered late does not move one back.
func TestTrackerListsReplicasSeenLately(t *testing.T) {
	tr := NewTracker("b", "me", nil)
	tr.Observe(heartbeat(0, "c", "x", "fp-c"), true)
	tr.Observe(heartbeat(time.Minute, "b", "me", "fp-b"), true)
	tr.Observe(heartbeat(2*time.Minute, "a", "y", ""), true)
	tr.Observe(heartbeat(90*time.Second, "a", "y", "old"), true)
	tr.Observe(domain.Event{Kind: domain.KindOutcomeRecorded, At: t0, Outcome: &domain.Outcome{Replica: "z"}}, true)

	seen, conflict := tr.View(t0.Add(5*time.Minute + 30*time.Second))
	if conflict != nil {
		t.Errorf("conflict %+v", conflict)
	}
	want := []Seen{
		{Replica: "a", LastHeard: t0.Add(2 * time.Minute)},
		{Replica: "b", LastHeard: t0.Add(time.Minute), PolicyFingerprint: "fp-b", Self: true},
	}
	if len(seen) != len(want) || seen[0] != want[0] || seen[1] != want[1] {
		t.Fatalf("seen = %+v, want %+v (c's heartbeat is more than 5 minutes old)", seen, want)
	}
}

// A router is alone until another replica's heartbeat is folded, and again
// once that one is older than SeenFor; its own heartbeats and an outcome
// naming another replica do not count.
func TestTrackerAloneUntilAnotherReplicaIsHeard(t *testing.T) {
	tr := NewTracker("a", "me", nil)
	if !tr.Alone(t0) {
		t.Fatal("a new tracker is not alone")
	}
	tr.Observe(heartbeat(0, "a", "me", ""), true)
	tr.Observe(domain.Event{Kind: domain.KindOutcomeRecorded, At: t0, Outcome: &domain.Outcome{Replica: "z"}}, true)
	if !tr.Alone(t0) {
		t.Fatal("its own heartbeat or another replica's outcome ended being alone")
	}
	tr.Observe(heartbeat(time.Second, "b", "x", ""), false)
	if tr.Alone(t0.Add(time.Second)) {
		t.Fatal("alone with b heard a moment ago")
	}
	if !tr.Alone(t0.Add(time.Second + SeenFor + time.Nanosecond)) {
		t.Fatal("not alone SeenFor after b's last heartbeat")
	}
}

// A live heartbeat with this router's id and another instance is a
// conflict, logged at ERROR once while it lasts and shown for ConflictFor
// after the last such heartbeat; the heartbeats of earlier processes with
// the id, stored before this one started, are not.
func TestTrackerReportsAnotherProcessWithTheID(t *testing.T) {
	var buf testkit.Buffer
	tr := NewTracker("a", "me", hclog.New(&hclog.LoggerOptions{Output: &buf}))
	tr.Observe(heartbeat(0, "a", "earlier", ""), false)
	tr.Observe(heartbeat(time.Second, "a", "me", ""), true)
	if _, c := tr.View(t0.Add(time.Second)); c != nil {
		t.Fatalf("a restart is reported as a conflict: %+v", c)
	}
	tr.Observe(heartbeat(10*time.Second, "a", "twin", ""), true)
	tr.Observe(heartbeat(40*time.Second, "a", "twin", ""), true)
	_, c := tr.View(t0.Add(41 * time.Second))
	if c == nil || c.Instance != "twin" || !c.At.Equal(t0.Add(40*time.Second)) {
		t.Fatalf("conflict = %+v, want instance twin at its last heartbeat", c)
	}
	if lines := buf.Lines("another live router uses this replica id"); len(lines) != 1 || !strings.Contains(lines[0], "[ERROR]") ||
		!strings.Contains(lines[0], "other_instance=twin") {
		t.Errorf("log lines %q, want one ERROR naming the other instance", lines)
	}
	if _, c := tr.View(t0.Add(40*time.Second + ConflictFor + time.Second)); c != nil {
		t.Errorf("conflict still shown %s after the twin's last heartbeat", ConflictFor+time.Second)
	}
}

// The Beater publishes at start and every HeartbeatEvery of its clock,
// with the fingerprint read at each beat and a distinct id per beat.
func TestBeaterPublishesOnItsClock(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	var mu sync.Mutex
	var got []domain.Event
	published := make(chan struct{}, 10)
	fp := "one"
	b := NewBeater(BeaterConfig{Replica: "r", Instance: "i", Clock: clock,
		Fingerprint: func() string { mu.Lock(); defer mu.Unlock(); return fp },
		Publish: func(_ context.Context, ev domain.Event) error {
			mu.Lock()
			got = append(got, ev)
			mu.Unlock()
			published <- struct{}{}
			return nil
		}})
	b.Start(t.Context())
	defer b.Stop()
	testkit.Receive(t, "the first heartbeat", published)
	mu.Lock()
	fp = "two"
	mu.Unlock()
	if err := clock.BlockUntilContext(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(HeartbeatEvery)
	testkit.Receive(t, "the second heartbeat", published)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0].Heartbeat.PolicyFingerprint != "one" || got[1].Heartbeat.PolicyFingerprint != "two" ||
		!got[1].At.Equal(t0.Add(HeartbeatEvery)) || got[0].ID == got[1].ID || got[1].Heartbeat.Replica != "r" ||
		got[1].Heartbeat.Instance != "i" || got[1].Valid() != nil {
		t.Fatalf("heartbeats = %+v", got)
	}
}
