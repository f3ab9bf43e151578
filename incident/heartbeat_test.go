package incident

import (
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// Heartbeats, two a minute per replica, stay out of the timeline unless
// asked for by kind (-kind heartbeat), which prints one line each.
func TestTimelineShowsHeartbeatsOnlyWhenAsked(t *testing.T) {
	evs := []domain.Event{
		{V: 1, Kind: domain.KindReplicaHeartbeat, ID: "heartbeat/1", At: incidentT0,
			Heartbeat: &domain.Heartbeat{Replica: "router-a:8080", Instance: "1f2e", PolicyFingerprint: "0e218e28fe08"}},
		{V: 1, Kind: domain.KindModelUnbenched, ID: "admin/1", At: incidentT0.Add(time.Second),
			Unbench: &domain.Unbench{Model: "gpt-4o", By: domain.LiftedByAdmin}},
		{V: 1, Kind: domain.KindReplicaHeartbeat, ID: "heartbeat/2", At: incidentT0.Add(30 * time.Second),
			Heartbeat: &domain.Heartbeat{Replica: "router-b:8080", Instance: "99aa"}},
	}
	for i := range evs {
		evs[i].Seq = uint64(i + 1)
	}
	if out, _ := timelineOf(t, memLog(evs, nil, nil), Filter{}); strings.Contains(out, "alive") || !strings.Contains(out, "unbenched") {
		t.Fatalf("default timeline:\n%s", out)
	}
	kinds, err := ParseKinds("heartbeat")
	if err != nil {
		t.Fatal(err)
	}
	want := "2026-11-29T03:11:23Z  -  -  replica router-a:8080 alive (instance 1f2e, policy 0e218e28fe08)\n" +
		"2026-11-29T03:11:53Z  -  -  replica router-b:8080 alive (instance 99aa)\n"
	if out, _ := timelineOf(t, memLog(evs, nil, nil), Filter{Kinds: kinds}); out != want {
		t.Fatalf("-kind heartbeat:\n%s\nwant:\n%s", out, want)
	}
}
