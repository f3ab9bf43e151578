package incident

import (
	"bytes"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// A recovery reads as it happened: the ban, each probe claimed and by
// whom, and the lift by recovery.
func TestTimelineShowsRecovery(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	ban := domain.Event{V: 1, Kind: domain.KindBanImposed, ID: "f2b/cred-a/gpt-4o/1", At: t0, Seq: 1,
		Ban: &domain.Ban{Credential: "cred-a", Model: "gpt-4o", Origin: domain.OriginFail2Ban, ErrorCode: 503,
			Reason: "3 x 503 (max_attempts 3, ban permanent)", Since: t0, Permanent: true, Failures: 3}}
	claim := func(n int, d time.Duration, seq uint64) domain.Event {
		return domain.Event{V: 1, Kind: domain.KindProbeClaimed, ID: domain.ProbeClaimID(ban.ID, n), At: t0.Add(d), Seq: seq,
			Probe: &domain.ProbeClaim{Credential: "cred-a", Model: "gpt-4o", BanID: ban.ID, Interval: n, Replica: "host-a/7/0a0b"}}
	}
	lift := domain.Event{V: 1, Kind: domain.KindBanLifted, ID: domain.RecoveryID(ban.ID), At: t0.Add(3*time.Minute + time.Second), Seq: 4,
		Unban: &domain.Unban{Credential: "cred-a", Model: "gpt-4o", By: domain.LiftedByRecovery, BanID: ban.ID}}
	var out bytes.Buffer
	tl := NewTimeline(&out, Filter{Credential: "cred-a"})
	for _, ev := range []domain.Event{ban, claim(0, time.Minute, 2), claim(1, 3*time.Minute, 3), lift} {
		if err := tl.Add(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := tl.Finish(); err != nil {
		t.Fatal(err)
	}
	want := "2026-11-29T03:00:00Z  cred-a  gpt-4o  banned (fail2ban) 3 x 503, max_attempts 3, ban permanent, permanent\n" +
		"2026-11-29T03:01:00Z  cred-a  gpt-4o  recovery probe 1 claimed by host-a/7/0a0b: one request may reach the banned pair\n" +
		"2026-11-29T03:03:00Z  cred-a  gpt-4o  recovery probe 2 claimed by host-a/7/0a0b: one request may reach the banned pair\n" +
		"2026-11-29T03:03:01Z  cred-a  gpt-4o  unbanned (recovery): a request to it succeeded\n"
	if out.String() != want {
		t.Fatalf("timeline:\n%s\nwant:\n%s", out.String(), want)
	}
}
