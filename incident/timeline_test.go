package incident

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

const incidentTimeline = `2026-11-29T03:11:23Z  cred-a  gpt-4o  1 ok, 2 x 429 (p50 90 ms)
2026-11-29T03:11:25Z  cred-b  gpt-4o  2 ok (p50 210 ms)
2026-11-29T03:12:05Z  cred-a  gpt-4o  1 x 429 (p50 70 ms)
2026-11-29T03:12:05Z  cred-a  gpt-4o  banned (fail2ban) 3 x 429 in 41 s, rule 429: max_attempts 3, ban 5m, until 03:17:05
2026-11-29T03:12:13Z  cred-b  gpt-4o  1 ok (p50 190 ms)
2026-11-29T03:12:24Z  cred-b  gpt-4o  cooling down until 03:12:54 (429 Retry-After 30s)
2026-11-29T03:13:23Z  cred-b  *  banned (admin) air-scaler drain, until 03:43:23
2026-11-29T03:13:53Z  *  gpt-4o  benched on every credential until 03:23:53: 3 failures on 2 credentials within 15m (last: 502) [cred-a, cred-c]
2026-11-29T03:14:23Z  cred-b  *  unbanned (admin), every ban of the credential
2026-11-29T03:17:05Z  cred-a  gpt-4o  ban expired
2026-11-29T03:17:06Z  -  -  fallback settings changed: max_hops 3, time_budget 45s, expose_detail_headers false
`

// timelineOf writes l's events that keep passes as a timeline.
func timelineOf(t *testing.T, l *Log, keep Filter) (string, *Timeline) {
	t.Helper()
	var out bytes.Buffer
	tl := NewTimeline(&out, keep)
	if err := Copy(t.Context(), l, 0, keep, tl); err != nil {
		t.Fatal(err)
	}
	return out.String(), tl
}

func TestTimelineReadsLikeAnIncidentReport(t *testing.T) {
	var notes bytes.Buffer
	out, tl := timelineOf(t, openExport(t, writeExport(t, incidentEvents()), &notes), Filter{})
	if out != incidentTimeline {
		t.Fatalf("timeline:\n%s\nwant:\n%s", out, incidentTimeline)
	}
	if tl.Unreadable() != 1 {
		t.Errorf("the timeline counts %d unreadable events, want 1", tl.Unreadable())
	}
	if notes.Len() != 0 {
		t.Errorf("notes on a whole log: %q", notes.String())
	}
	// The same events from memory read the same.
	if out, _ := timelineOf(t, memLog(incidentEvents(), nil, nil), Filter{}); out != incidentTimeline {
		t.Fatalf("timeline from memory:\n%s", out)
	}
}

// A follower's timeline writes a line per outcome.
func TestTimelineLivePerOutcome(t *testing.T) {
	var out bytes.Buffer
	tl := NewLiveTimeline(&out, Filter{})
	for _, ev := range incidentEvents()[:3] {
		if err := tl.Add(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := tl.Finish(); err != nil {
		t.Fatal(err)
	}
	want := "2026-11-29T03:11:23Z  cred-a  gpt-4o  ok, 200 ms, attempt 1\n" +
		"2026-11-29T03:11:24Z  cred-a  gpt-4o  429 rate_limited, 90 ms, attempt 1\n" +
		"2026-11-29T03:11:25Z  cred-b  gpt-4o  ok, 210 ms, attempt 1\n"
	if out.String() != want {
		t.Fatalf("live timeline:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestTimelineFilters(t *testing.T) {
	file := writeExport(t, incidentEvents())
	kinds := func(s string) Filter {
		k, err := ParseKinds(s)
		if err != nil {
			t.Fatal(err)
		}
		return Filter{Kinds: k}
	}
	at := func(s string) time.Time {
		m, err := ParseMoment(s, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	credB := kinds("outcome,ban,unban,cooldown")
	credB.Credential = "cred-b"
	for _, tc := range []struct {
		name string
		keep Filter
		want []string // the lines' "what" columns, in order
	}{
		{"-kind ban,unban", kinds("ban,unban"), []string{"banned (fail2ban)", "banned (admin)", "unbanned (admin)", "ban expired"}},
		{"-kind ban.lifted", kinds("ban.lifted"), []string{"unbanned (admin)", "ban expired"}},
		{"-credential cred-b -kind outcome,ban,unban,cooldown", credB, []string{"2 ok", "1 ok", "cooling down", "banned (admin)", "unbanned (admin)"}},
		{"-credential cred-c", Filter{Credential: "cred-c"}, []string{"benched"}},
		{"-since 03:13 -until 03:14", Filter{Since: at("2026-11-29T03:13:00Z"), Until: at("2026-11-29T03:14:00Z")}, []string{"banned (admin)", "benched"}},
		{"-model gpt-5", Filter{Model: "gpt-5"}, []string{"banned (admin)", "unbanned (admin)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _ := timelineOf(t, openExport(t, file, nil), tc.keep)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != len(tc.want) {
				t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(tc.want), out)
			}
			for i, w := range tc.want {
				if !strings.Contains(lines[i], w) {
					t.Errorf("line %d = %q, want it to contain %q", i, lines[i], w)
				}
			}
		})
	}
}

// Filter values are parsed strictly: unknown kinds and times that are
// neither RFC 3339 nor a duration back from now are refused.
func TestFilterParsing(t *testing.T) {
	if _, err := ParseKinds("bans"); err == nil || !strings.Contains(err.Error(), "unknown kind \"bans\"") {
		t.Errorf("ParseKinds(bans) = %v", err)
	}
	if k, err := ParseKinds(""); k != nil || err != nil {
		t.Errorf("ParseKinds(\"\") = %v, %v", k, err)
	}
	if _, err := ParseMoment("yesterday", time.Now()); err == nil {
		t.Error("ParseMoment(yesterday) succeeded")
	}
	now := time.Date(2026, 11, 29, 5, 0, 0, 0, time.UTC)
	if m, err := ParseMoment("2h", now); err != nil || !m.Equal(now.Add(-2*time.Hour)) {
		t.Errorf("ParseMoment(2h) = %v, %v", m, err)
	}
	if m, err := ParseMoment("", now); err != nil || !m.IsZero() {
		t.Errorf("ParseMoment(\"\") = %v, %v", m, err)
	}
}
