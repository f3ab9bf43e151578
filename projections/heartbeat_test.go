package projections

import (
	"reflect"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// A heartbeat changes no routing state: the ban table, counters and
// snapshot queries read the same after it, and it is not skipped; only the
// position and the time of the last event move.
func TestHeartbeatChangesNoRoutingState(t *testing.T) {
	s := Apply(nil, outcome(0, "a", "gpt", 500))
	s = Apply(s, autoBan(0, "b", "a", "gpt", 500, time.Minute))
	before := s.Snapshot().StateView(t0)
	hb := domain.Event{V: domain.SchemaVersion, Kind: domain.KindReplicaHeartbeat, At: t0, Seq: 3,
		Heartbeat: &domain.Heartbeat{Replica: "r1", Instance: "i1", PolicyFingerprint: "fp"}}
	s, ch := ApplyReport(s, hb)
	if len(ch.Bans) != 0 {
		t.Errorf("a heartbeat reported ban changes: %+v", ch)
	}
	if s.Skipped() != (Skipped{}) {
		t.Errorf("a heartbeat was skipped: %+v", s.Skipped())
	}
	after := s.Snapshot().StateView(t0)
	if !reflect.DeepEqual(after.Pairs, before.Pairs) || !reflect.DeepEqual(after.Bans, before.Bans) {
		t.Errorf("a heartbeat changed the state:\nbefore %+v\nafter  %+v", before, after)
	}
}
