package main

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/adminapi"
	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

// pastT0 is when the fake clock of the timeline and dashboard tests starts.
var pastT0 = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

// banPolicy429 bans a pair for 3 h after three 429s.
const banPolicy429 = "fail2ban:\n  max_attempts: 3\n  ban_duration: 1h\n  error_code_rules:\n    - code: 429\n      max_attempts: 3\n      ban_duration: 3h\n"

// banByFailures makes cred-a's upstream answer 429 until the router bans
// the pair.
func banByFailures(t *testing.T, r *running, a *upstream, clock clockwork.Clock) {
	t.Helper()
	a.status.Store(429)
	failed := a.calls.Load()
	chatUntil(t, r, "three 429s from cred-a", func() bool { return a.calls.Load() >= failed+3 })
	testkit.Eventually(t, "the fail2ban ban of cred-a", func() bool {
		_, ok := r.live.Load().Blocked("cred-a", "gpt-test", clock.Now())
		return ok
	})
	a.status.Store(200)
}

// bannedAnHourIn starts a router on a fake clock at pastT0 over cred-a and
// cred-b (both answering), serves two requests, and an hour later has
// Fail2Ban ban cred-a for gpt-test.
func bannedAnHourIn(t *testing.T) (*running, *clockwork.FakeClock) {
	t.Helper()
	a, b := newUpstream(t, 200), newUpstream(t, 200)
	clock := clockwork.NewFakeClockAt(pastT0)
	r := startOn(t, testConfig(t, tempStore(t), "file", banPolicy429, a, b), clock)
	chatUntil(t, r, "two requests", func() bool { return a.calls.Load()+b.calls.Load() >= 2 })
	clock.Advance(time.Hour)
	banByFailures(t, r, a, clock)
	return r, clock
}

func readTimeline(t *testing.T, r *running, query string) adminapi.Timeline {
	t.Helper()
	status, _, body := r.do(t, "GET", "/api/timeline"+query, "", nil)
	if status != 200 {
		t.Fatalf("/api/timeline%s = %d %s", query, status, body)
	}
	var tl adminapi.Timeline
	if err := json.Unmarshal(body, &tl); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return tl
}

// The timeline of a run holds each ban from its start to its end in the
// fold (a lifted admin ban ends at the unban, an expired one at its until
// whichever event found it ended, a Fail2Ban ban still in force runs to its
// until), the cooldown and the bench with their ends, from the
// state at since when a ban began before the window; a window reaching
// back past the log starts at its first event. Withheld and shadow bans are
// marks.
func TestTimelineShowsWhatHeldEachPair(t *testing.T) {
	r, clock := bannedAnHourIn(t)
	banAt := clock.Now()

	clock.Advance(10 * time.Minute)
	if status, _, body := r.do(t, "POST", "/api/ban", testMasterKey, map[string]any{"credential": "cred-b", "ttl": "30m", "reason": "drain"}); status != 200 {
		t.Fatalf("/api/ban = %d %s", status, body)
	}
	clock.Advance(5 * time.Minute)
	if status, _, body := r.do(t, "POST", "/api/unban", testMasterKey, map[string]any{"credential": "cred-b"}); status != 200 {
		t.Fatalf("/api/unban = %d %s", status, body)
	}
	now := clock.Now()
	ctx := context.Background()
	for _, ev := range []domain.Event{
		{V: 1, Kind: domain.KindCooldownStarted, ID: "test/cooldown", At: now,
			Cooldown: &domain.Cooldown{Credential: "cred-b", Model: "gpt-test", Until: now.Add(2 * time.Minute), Status: 429}},
		{V: 1, Kind: domain.KindModelBenched, ID: "test/bench", At: now,
			Bench: &domain.Bench{Model: "gpt-test", Until: now.Add(time.Hour), Failures: 5, Credentials: []string{"cred-a", "cred-b"}, Reason: "5 failures on 2 credentials"}},
		{V: 1, Kind: domain.KindModelUnbenched, ID: "test/unbench", At: now.Add(time.Minute), Unbench: &domain.Unbench{Model: "gpt-test", By: domain.LiftedByAdmin}},
		{V: 1, Kind: domain.KindBanWithheld, ID: "test/withheld", At: now.Add(time.Minute),
			Withheld: &domain.Withheld{Credential: "cred-b", Model: "gpt-test", ErrorCode: 503, Rule: "3 x 503 (max_attempts 3, ban 1h)",
				Reason: "ejection cap 50%: 1 of 2 pairs banned", Cap: 50, Banned: 1, Pairs: 2, Failures: 3}},
		{V: 1, Kind: domain.KindBanShadowed, ID: "test/shadowed", At: now.Add(time.Minute),
			Shadowed: &domain.Ban{Credential: "cred-b", Model: "gpt-test", Origin: domain.OriginFail2Ban, Reason: "2 x 500 (shadow rule 500)", Since: now, Permanent: true}},
	} {
		if _, err := r.log.PublishControl(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(10 * time.Minute)
	short := clock.Now()
	if status, _, body := r.do(t, "POST", "/api/ban", testMasterKey, map[string]any{"credential": "cred-b", "model": "gpt-test", "ttl": "5m"}); status != 200 {
		t.Fatalf("/api/ban = %d %s", status, body)
	}
	clock.Advance(10 * time.Minute)
	testkit.Eventually(t, "the short ban's expiry in the timeline", func() bool {
		tl := readTimeline(t, r, "")
		return len(tl.Intervals) > 0 && tl.Intervals[len(tl.Intervals)-1].End == "expired"
	})
	// A ban found ended by a later outcome on its pair (no expiry event
	// came first: both are stamped ahead of the router's clock) ends at
	// its until, not at the outcome.
	late := clock.Now()
	lateUntil := late.Add(2 * time.Minute)
	for _, ev := range []domain.Event{
		{V: 1, Kind: domain.KindBanImposed, ID: "test/late-ban", At: late.Add(time.Minute),
			Ban: &domain.Ban{Credential: "cred-b", Model: "gpt-test", Origin: domain.OriginAdmin, Reason: "admin: late", Since: late.Add(time.Minute), Until: &lateUntil}},
		{V: 1, Kind: domain.KindOutcomeRecorded, ID: "test/late-outcome", At: late.Add(3 * time.Minute),
			Outcome: &domain.Outcome{Credential: "cred-b", Model: "gpt-test", Status: 200, Class: domain.ClassOK, LatencyMS: 90, Attempt: 1}},
	} {
		if _, err := r.log.PublishControl(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	settle(t, r)
	clock.Advance(5 * time.Minute)
	settle(t, r)

	tl := readTimeline(t, r, "?since=3h")
	if !tl.Since.Before(pastT0.Add(time.Second)) || tl.Since.Before(pastT0) || !tl.Until.Equal(clock.Now()) {
		t.Fatalf("window %s..%s, want from the first event (%s) to now", tl.Since, tl.Until, pastT0)
	}
	want := []string{
		"ban cred-a gpt-test fail2ban " + stampOf(banAt) + " " + stampOf(banAt.Add(3*time.Hour)) + " ",
		"ban cred-b * admin " + stampOf(banAt.Add(10*time.Minute)) + " " + stampOf(banAt.Add(15*time.Minute)) + " lifted",
		"cooldown cred-b gpt-test  " + stampOf(now) + " " + stampOf(now.Add(2*time.Minute)) + " ",
		"bench * gpt-test  " + stampOf(now) + " " + stampOf(now.Add(time.Minute)) + " lifted",
		"ban cred-b gpt-test admin " + stampOf(short) + " " + stampOf(short.Add(5*time.Minute)) + " expired",
		"ban cred-b gpt-test admin " + stampOf(late.Add(time.Minute)) + " " + stampOf(lateUntil) + " expired",
	}
	if got := intervals(tl); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("intervals:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if r := tl.Intervals[0].Reason; !strings.HasPrefix(r, "3 x 429") {
		t.Errorf("the ban's reason %q", r)
	}
	// The guards' events are marks, with the reason their payload gives.
	var marks []string
	for _, m := range tl.Marks {
		marks = append(marks, strings.Join([]string{string(m.Kind), m.Credential, m.Model, stampOf(m.At), m.Reason}, " "))
	}
	wantMarks := []string{
		"ban.withheld cred-b gpt-test " + stampOf(now.Add(time.Minute)) + " ejection cap 50%: 1 of 2 pairs banned",
		"ban.shadowed cred-b gpt-test " + stampOf(now.Add(time.Minute)) + " 2 x 500 (shadow rule 500)",
	}
	if strings.Join(marks, "\n") != strings.Join(wantMarks, "\n") {
		t.Errorf("marks:\n%s\nwant:\n%s", strings.Join(marks, "\n"), strings.Join(wantMarks, "\n"))
	}

	// From a moment inside the Fail2Ban ban: it comes from the state then.
	since := banAt.Add(5 * time.Minute)
	tl = readTimeline(t, r, "?since="+url.QueryEscape(since.Format(time.RFC3339)))
	got := intervals(tl)
	if strings.Join(got, "\n") != strings.Join(want, "\n") || !tl.Since.Equal(since) {
		t.Fatalf("from %s: %s..%s\n%s", since, tl.Since, tl.Until, strings.Join(got, "\n"))
	}
}

func stampOf(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// intervals renders a timeline's intervals as "kind cred model origin from
// until end".
func intervals(tl adminapi.Timeline) []string {
	var out []string
	for _, iv := range tl.Intervals {
		until := "-"
		if iv.Until != nil {
			until = stampOf(*iv.Until)
		}
		out = append(out, strings.Join([]string{iv.Kind, iv.Credential, iv.Model, string(iv.Origin), stampOf(iv.From), until, iv.End}, " "))
	}
	return out
}
