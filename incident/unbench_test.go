package incident

import (
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// An admin's unbench shows in the timeline after the bench it lifted, and
// -kind unbench and -model keep it; -credential does not (it names none).
func TestTimelineShowsAnUnbench(t *testing.T) {
	at := incidentT0.Add(time.Minute)
	evs := []domain.Event{
		{V: 1, Kind: domain.KindModelBenched, ID: "bench/gpt-4o/1", At: incidentT0,
			Bench: &domain.Bench{Model: "gpt-4o", Until: incidentT0.Add(10 * time.Minute), Failures: 3,
				Credentials: []string{"cred-a", "cred-b"}, Reason: "3 failures on 2 credentials within 15m (last: 502)"}},
		{V: 1, Kind: domain.KindModelUnbenched, ID: "admin/1", At: at,
			Unbench: &domain.Unbench{Model: "gpt-4o", By: domain.LiftedByAdmin}},
	}
	for i := range evs {
		evs[i].Seq = uint64(i + 1)
	}
	want := "2026-11-29T03:12:23Z  *  gpt-4o  unbenched (admin): routed again on every credential\n"
	out, _ := timelineOf(t, memLog(evs, nil, nil), Filter{})
	if !strings.HasSuffix(out, want) || !strings.Contains(out, "benched on every credential until") {
		t.Fatalf("timeline:\n%s\nwant it to end with:\n%s", out, want)
	}
	kinds, err := ParseKinds("unbench")
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := timelineOf(t, memLog(evs, nil, nil), Filter{Kinds: kinds, Model: "gpt-4o"}); out != want {
		t.Fatalf("-kind unbench -model gpt-4o:\n%s\nwant:\n%s", out, want)
	}
	if out, _ := timelineOf(t, memLog(evs, nil, nil), Filter{Kinds: kinds, Credential: "cred-a"}); strings.Contains(out, "unbenched") {
		t.Fatalf("-credential keeps the unbench:\n%s", out)
	}
}
