package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// incidentT0 is the start of the made-up incident the timeline tests read.
var incidentT0 = time.Date(2026, 11, 29, 3, 11, 23, 0, time.UTC)

func outcomeAt(d time.Duration, cred string, status int, latency int64) domain.Event {
	class := domain.ClassifyStatus(status)
	return domain.Event{V: 1, Kind: domain.KindOutcomeRecorded, At: incidentT0.Add(d),
		Outcome: &domain.Outcome{Credential: cred, Model: "gpt-4o", Status: status, Class: class, LatencyMS: latency, Attempt: 1}}
}

// incidentEvents is a small incident: traffic, three 429s that ban
// cred-a, an admin ban and unban of cred-b, a cooldown, a bench, an expiry,
// a settings change, and a message this version cannot read.
func incidentEvents() []domain.Event {
	until := incidentT0.Add(42*time.Second + 5*time.Minute)
	adminUntil := incidentT0.Add(2*time.Minute + 30*time.Minute)
	evs := []domain.Event{
		outcomeAt(0, "cred-a", 200, 200),
		outcomeAt(time.Second, "cred-a", 429, 90),
		outcomeAt(2*time.Second, "cred-b", 200, 210),
		outcomeAt(3*time.Second, "cred-b", 200, 230),
		outcomeAt(20*time.Second, "cred-a", 429, 80),
		outcomeAt(42*time.Second, "cred-a", 429, 70),
		{V: 1, Kind: domain.KindBanImposed, ID: "f2b/cred-a/gpt-4o/6", At: incidentT0.Add(42 * time.Second),
			Ban: &domain.Ban{Credential: "cred-a", Model: "gpt-4o", Origin: domain.OriginFail2Ban,
				Reason: "3 x 429 (rule 429: max_attempts 3, ban 5m)", ErrorCode: 429,
				Since: incidentT0.Add(42 * time.Second), Until: &until, Failures: 3, CauseSeq: 6}},
		outcomeAt(50*time.Second, "cred-b", 200, 190),
		{V: 1, Kind: domain.KindCooldownStarted, ID: "cooldown/cred-b/gpt-4o/9", At: incidentT0.Add(61 * time.Second),
			Cooldown: &domain.Cooldown{Credential: "cred-b", Model: "gpt-4o", Until: incidentT0.Add(91 * time.Second), Status: 429, CauseSeq: 9}},
		{V: 1, Kind: domain.KindBanImposed, ID: "admin/1", At: incidentT0.Add(2 * time.Minute),
			Ban: &domain.Ban{Credential: "cred-b", Model: "*", Origin: domain.OriginAdmin, Reason: "admin: air-scaler drain",
				Since: incidentT0.Add(2 * time.Minute), Until: &adminUntil}},
		{V: 1, Kind: domain.KindModelBenched, ID: "bench/gpt-4o/12", At: incidentT0.Add(150 * time.Second),
			Bench: &domain.Bench{Model: "gpt-4o", Until: incidentT0.Add(150*time.Second + 10*time.Minute), Failures: 3,
				Credentials: []string{"cred-a", "cred-c"}, Reason: "3 failures on 2 credentials within 15m (last: 502)"}},
		{V: 1, Kind: domain.KindBanLifted, ID: "admin/2", At: incidentT0.Add(3 * time.Minute),
			Unban: &domain.Unban{Credential: "cred-b", By: domain.LiftedByAdmin}},
		{V: 1, Kind: domain.KindBanLifted, ID: "expiry/f2b/cred-a/gpt-4o/6", At: until,
			Unban: &domain.Unban{Credential: "cred-a", Model: "gpt-4o", By: domain.LiftedByExpiry, BanID: "f2b/cred-a/gpt-4o/6"}},
		{V: 1, Kind: domain.KindFallbackSettingsChanged, ID: "admin/3", At: until.Add(time.Second),
			Settings: &domain.FallbackSettings{MaxHops: 3, TimeBudget: domain.Duration(45 * time.Second)}},
	}
	for i := range evs {
		evs[i].Seq = uint64(i + 1)
	}
	// seq 15: a message this version cannot read.
	return append(evs, domain.Event{Seq: uint64(len(evs) + 1)})
}

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

// writeExport writes events as an exported file and returns its path.
func writeExport(t *testing.T, evs []domain.Event) string {
	t.Helper()
	var b []byte
	for _, ev := range evs {
		var err error
		if b, err = appendExportLine(b, ev); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "incident.jsonl")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// runCmd runs a subcommand and returns its stdout and stderr.
func runCmd(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := dispatch(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), err
}

func TestTimelineReadsLikeAnIncidentReport(t *testing.T) {
	file := writeExport(t, incidentEvents())
	out, stderr, err := runCmd(t, "replay", "-file", file)
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, stderr)
	}
	if out != incidentTimeline {
		t.Fatalf("timeline:\n%s\nwant:\n%s", out, incidentTimeline)
	}
	if !strings.Contains(stderr, "1 events this version cannot read") {
		t.Errorf("stderr does not count the unreadable event: %q", stderr)
	}
}

func TestTimelineFilters(t *testing.T) {
	file := writeExport(t, incidentEvents())
	for _, tc := range []struct {
		args []string
		want []string // the lines' "what" columns, in order
	}{
		{[]string{"-kind", "ban,unban"}, []string{"banned (fail2ban)", "banned (admin)", "unbanned (admin)", "ban expired"}},
		{[]string{"-kind", "ban.lifted"}, []string{"unbanned (admin)", "ban expired"}},
		{[]string{"-credential", "cred-b", "-kind", "outcome,ban,unban,cooldown"}, []string{"2 ok", "1 ok", "cooling down", "banned (admin)", "unbanned (admin)"}},
		{[]string{"-credential", "cred-c"}, []string{"benched"}},
		{[]string{"-since", "2026-11-29T03:13:00Z", "-until", "2026-11-29T03:14:00Z"}, []string{"banned (admin)", "benched"}},
		{[]string{"-model", "gpt-5"}, []string{"banned (admin)", "unbanned (admin)"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, stderr, err := runCmd(t, append([]string{"replay", "-file", file}, tc.args...)...)
			if err != nil {
				t.Fatalf("replay: %v\n%s", err, stderr)
			}
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

func TestReplayRejectsBadFlags(t *testing.T) {
	file := writeExport(t, incidentEvents())
	for _, args := range [][]string{
		{"replay"},
		{"replay", "-file", file, "-kind", "bans"},
		{"replay", "-file", file, "-since", "yesterday"},
		{"replay", "-file", file, "-since", "1h", "-until", "2h"},
		{"replay", "-file", file, "-format", "xml"},
		{"replay", "-file", file, "-at", "1h", "-credential", "cred-a"},
		{"replay", "-file", file, "-view", "metrics"},
		{"replay", "-file", filepath.Join(t.TempDir(), "missing.jsonl")},
		{"replay", "-file", file, "-nats", "nats://127.0.0.1:1"},
		{"replay", "-file", file, "extra"},
		{"export"},
		{"tail", "-file", file},
	} {
		if _, _, err := runCmd(t, args...); err == nil {
			t.Errorf("%q succeeded", args)
		}
	}
}

// The export format round-trips: every event, the unreadable one as a
// bare seq, lines without a seq numbered on, and lines that are not JSON
// skipped with a note.
func TestExportLinesRoundTrip(t *testing.T) {
	evs := incidentEvents()
	file := writeExport(t, evs)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte(`{"seq":1,"v":1,"kind":"outcome.recorded","at":"2026-11-29T03:11:23Z"`)) {
		t.Fatalf("first line: %.120s", data)
	}
	if !bytes.HasSuffix(data, []byte("\n{\"seq\":15}\n")) {
		t.Fatalf("the unreadable event is not a bare seq: %q", data[len(data)-40:])
	}
	extra := "not json\n" + `{"v":1,"kind":"ban.lifted","at":"2026-11-29T04:00:00Z","unban":{"credential":"cred-a","by":"admin"}}` + "\n"
	data = append(data, extra...)
	r := newLineReader(bytes.NewReader(data))
	var got []domain.Event
	for {
		ev, err := r.next()
		if err != nil {
			break
		}
		got = append(got, ev)
	}
	if len(got) != len(evs)+1 || r.bad != 1 || r.firstBad != len(evs)+1 {
		t.Fatalf("read %d events, %d bad lines (first %d)", len(got), r.bad, r.firstBad)
	}
	for i, ev := range evs {
		a, _ := appendExportLine(nil, ev)
		b, _ := appendExportLine(nil, got[i])
		if !bytes.Equal(a, b) {
			t.Fatalf("event %d:\n%s\nread back as\n%s", i, a, b)
		}
	}
	if last := got[len(got)-1]; last.Seq != uint64(len(evs)+1) || last.Kind != domain.KindBanLifted {
		t.Fatalf("a line without seq reads as %+v", last)
	}
}

// Events inside an outcome batch keep their index through an export, and
// an unreadable one inside a batch is a bare position.
func TestExportLinesKeepBatchPositions(t *testing.T) {
	evs := incidentEvents()[:3]
	evs[0].Seq, evs[0].Index = 7, 0
	evs[1].Seq, evs[1].Index = 7, 1
	evs[2] = domain.Event{Seq: 7, Index: 2}
	var data []byte
	for _, ev := range evs {
		var err error
		if data, err = appendExportLine(data, ev); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if !strings.HasPrefix(lines[0], `{"seq":7,"v":1,`) || !strings.HasPrefix(lines[1], `{"seq":7,"index":1,"v":1,`) ||
		lines[2] != `{"seq":7,"index":2}` {
		t.Fatalf("export lines:\n%s", data)
	}
	r := newLineReader(bytes.NewReader(data))
	for i, want := range evs {
		got, err := r.next()
		if err != nil {
			t.Fatal(err)
		}
		if got.Pos() != want.Pos() || got.Kind != want.Kind {
			t.Fatalf("line %d read back at %v (%s), want %v (%s)", i, got.Pos(), got.Kind, want.Pos(), want.Kind)
		}
	}
	// A line whose position is not first still gives it, through JSON.
	if p, ok := linePos([]byte(`{"v":1,"index":3,"seq":9}`)); !ok || p != (domain.Pos{Seq: 9, Index: 3}) {
		t.Fatalf("linePos = %v %v", p, ok)
	}
}
