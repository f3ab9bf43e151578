package incident

import (
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
)

// guardsTimeline is the timeline of guardsLog: a ban, a withheld ban, a
// shadow ban, the rate-limit ladder's steps and an auth cooldown, as they
// happened.
const guardsTimeline = `2026-11-29T03:11:23Z  cred-a  gpt-4o  3 x 503 (p50 120 ms)
2026-11-29T03:11:24Z  cred-b  gpt-4o  2 x 503 (p50 120 ms)
2026-11-29T03:11:28Z  cred-a  gpt-4o  banned (fail2ban) 3 x 503 in 5 s, max_attempts 3, ban permanent, permanent
2026-11-29T03:11:29Z  cred-b  gpt-4o  1 x 503 (p50 120 ms)
2026-11-29T03:11:29Z  cred-b  gpt-4o  ban withheld by the ejection cap (1 of 2 pairs of the model banned, cap 50%): rule 3 x 503 (max_attempts 3, ban permanent); still counted, banned once the cap allows
2026-11-29T03:11:30Z  cred-c  gpt-4o  2 x 400 (p50 120 ms)
2026-11-29T03:11:31Z  cred-c  gpt-4o  would have banned (shadow rule, enforce: false; nothing banned) 2 x 400 in 1 s, rule 400: max_attempts 2, ban 5m, until 03:16:31
2026-11-29T03:11:32Z  cred-d  gpt-4o  1 x 429 (p50 120 ms)
2026-11-29T03:11:32Z  cred-d  gpt-4o  cooling down until 03:11:33 (429 rate limit, step 1: 1s)
2026-11-29T03:11:33Z  cred-d  gpt-4o  1 x 429 (p50 120 ms)
2026-11-29T03:11:33Z  cred-d  gpt-4o  cooling down until 03:11:35 (429 rate limit, step 2: 2s)
2026-11-29T03:11:35Z  cred-d  gpt-4o  1 x 429 (p50 120 ms)
2026-11-29T03:11:35Z  cred-d  gpt-4o  cooling down until 03:11:39 (429 rate limit, step 3: 4s)
2026-11-29T03:11:39Z  cred-d  gpt-4o  1 x 429 (p50 120 ms)
2026-11-29T03:11:39Z  cred-d  gpt-4o  cooling down until 03:11:49 (429 Retry-After 10s (rate limit, step 4: 4s))
2026-11-29T03:11:50Z  cred-e  o3  1 x 401 (p50 120 ms)
2026-11-29T03:11:50Z  cred-e  *  every model cooling down until 03:16:50 (401 auth: 401)
`

// guardsLog folds outcomes and decides on each as the router does
// (projections.Apply, domain.Decide on State.Facts), and logs each
// decision right after its outcome.
func guardsLog(t *testing.T) []domain.Event {
	t.Helper()
	p := domain.BanPolicy{
		Default: domain.Rule{MaxAttempts: 3, Permanent: true}, Codes: []int{400, 401, 503},
		Rules:              map[int]domain.Rule{400: {MaxAttempts: 2, Duration: 5 * time.Minute, Shadow: true}},
		MaxEjectionPercent: 50,
		Cooldown:           domain.CooldownPolicy{RateLimitBase: time.Second, RateLimitMax: 4 * time.Second, Auth: 5 * time.Minute},
	}
	type o struct {
		sec    int
		cred   string
		model  string
		status int
		ra     int64
	}
	outs := []o{
		{0, "cred-a", "gpt-4o", 503, 0}, {1, "cred-b", "gpt-4o", 503, 0}, {2, "cred-a", "gpt-4o", 503, 0},
		{3, "cred-b", "gpt-4o", 503, 0}, {5, "cred-a", "gpt-4o", 503, 0}, {6, "cred-b", "gpt-4o", 503, 0},
		{7, "cred-c", "gpt-4o", 400, 0}, {8, "cred-c", "gpt-4o", 400, 0},
		{9, "cred-d", "gpt-4o", 429, 0}, {10, "cred-d", "gpt-4o", 429, 0}, {12, "cred-d", "gpt-4o", 429, 0},
		{16, "cred-d", "gpt-4o", 429, 10_000},
		{27, "cred-e", "o3", 401, 0},
	}
	s := projections.NewState()
	var log []domain.Event
	add := func(ev domain.Event) {
		ev.Seq = uint64(len(log) + 1)
		log = append(log, ev)
		s = projections.Apply(s, ev)
	}
	for _, x := range outs {
		ev := domain.Event{V: 1, Kind: domain.KindOutcomeRecorded, At: incidentT0.Add(time.Duration(x.sec) * time.Second),
			Outcome: &domain.Outcome{Credential: x.cred, Model: x.model, Status: x.status,
				Class: domain.ClassifyStatus(x.status), LatencyMS: 120, Attempt: 1, RetryAfterMS: x.ra}}
		add(ev)
		ev = log[len(log)-1]
		for _, d := range domain.Decide(p, ev, s.Facts(ev)) {
			add(d)
		}
	}
	return log
}

func TestTimelineShowsTheGuards(t *testing.T) {
	out, _ := timelineOf(t, memLog(guardsLog(t), nil, nil), Filter{})
	if out != guardsTimeline {
		t.Fatalf("timeline:\n%s\nwant:\n%s", out, guardsTimeline)
	}
	// The short kind names pick them.
	k, err := ParseKinds("withheld,shadow")
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := timelineOf(t, memLog(guardsLog(t), nil, nil), Filter{Kinds: k, Credential: "cred-c"}); out !=
		"2026-11-29T03:11:31Z  cred-c  gpt-4o  would have banned (shadow rule, enforce: false; nothing banned) 2 x 400 in 1 s, rule 400: max_attempts 2, ban 5m, until 03:16:31\n" {
		t.Fatalf("the shadow ban of cred-c:\n%s", out)
	}
	// A credential-wide cooldown concerns every model of the credential.
	if out, _ := timelineOf(t, memLog(guardsLog(t), nil, nil), Filter{Credential: "cred-e", Model: "gpt-4o"}); out !=
		"2026-11-29T03:11:50Z  cred-e  *  every model cooling down until 03:16:50 (401 auth: 401)\n" {
		t.Fatalf("cred-e on gpt-4o:\n%s", out)
	}
}

// Two bans decided under the cap before either was in the log: the fold
// imposes the first, and the timeline says the second was not imposed.
func TestTimelineSaysABanTheCapRefused(t *testing.T) {
	out := func(sec int, cred string) domain.Event {
		return domain.Event{V: 1, Kind: domain.KindOutcomeRecorded, At: incidentT0.Add(time.Duration(sec) * time.Second),
			Outcome: &domain.Outcome{Credential: cred, Model: "gpt-4o", Status: 503, Class: domain.ClassServerError, LatencyMS: 120, Attempt: 1}}
	}
	ban := func(sec int, cred string, cause uint64) domain.Event {
		return domain.Event{V: 1, Kind: domain.KindBanImposed, ID: "f2b/" + cred + "/gpt-4o/1", At: incidentT0.Add(time.Duration(sec) * time.Second),
			Ban: &domain.Ban{Credential: cred, Model: "gpt-4o", Origin: domain.OriginFail2Ban, Reason: "1 x 503 (max_attempts 1, ban permanent)",
				ErrorCode: 503, Since: incidentT0.Add(time.Duration(sec) * time.Second), Permanent: true, Failures: 1, Cap: 50, CauseSeq: cause}}
	}
	log := []domain.Event{out(0, "cred-a"), out(0, "cred-b"), ban(1, "cred-a", 1), ban(1, "cred-b", 2)}
	for i := range log {
		log[i].Seq = uint64(i + 1)
	}
	got, _ := timelineOf(t, memLog(log, nil, nil), Filter{Kinds: map[domain.Kind]bool{domain.KindBanImposed: true}})
	want := "2026-11-29T03:11:24Z  cred-a  gpt-4o  banned (fail2ban) 1 x 503, max_attempts 1, ban permanent, permanent\n" +
		"2026-11-29T03:11:24Z  cred-b  gpt-4o  ban not imposed by the ejection cap (50%): decided with other bans of the model not yet in the log, it found no room when it arrived; rule 1 x 503, max_attempts 1, ban permanent\n"
	if got != want {
		t.Fatalf("timeline:\n%s\nwant:\n%s", got, want)
	}
}
