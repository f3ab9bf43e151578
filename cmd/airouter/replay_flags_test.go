package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runCmd runs a subcommand and returns its stdout and stderr.
func runCmd(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := dispatch(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), err
}

// smallExport is an exported file from log position 5: an outcome, an
// event this version cannot read, a line that is not JSON, and a ban.
const smallExport = `{"seq":5,"v":1,"kind":"outcome.recorded","at":"2026-11-29T03:11:23Z","outcome":{"credential":"cred-a","model":"gpt-4o","status":429,"class":"rate_limited","latency_ms":90,"attempt":1}}
{"seq":6}
not json
{"seq":7,"v":1,"kind":"ban.imposed","id":"admin/1","at":"2026-11-29T03:12:00Z","ban":{"credential":"cred-a","model":"*","origin":"admin","reason":"admin: drain","since":"2026-11-29T03:12:00Z","permanent":true}}
`

func writeSmallExport(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "incident.jsonl")
	writeFile(t, path, smallExport)
	return path
}

// replay -file prints the timeline and says on stderr what it could not
// include: state from before the file's first position, events this version
// cannot read, lines that are not JSON.
func TestReplayFileNotesWhatItSkipped(t *testing.T) {
	file := writeSmallExport(t)
	out, stderr, err := runCmd(t, "replay", "-file", file)
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, stderr)
	}
	want := "2026-11-29T03:11:23Z  cred-a  gpt-4o  1 x 429 (p50 90 ms)\n" +
		"2026-11-29T03:12:00Z  cred-a  *  banned (admin) drain, permanent\n"
	if out != want {
		t.Fatalf("timeline:\n%s\nwant:\n%s", out, want)
	}
	for _, note := range []string{
		"note: " + file + " starts at log position 5",
		"1 events this version cannot read",
		"note: " + file + ": 1 lines are not JSON and were skipped (the first is line 3)",
	} {
		if !strings.Contains(stderr, note) {
			t.Errorf("stderr does not say %q: %q", note, stderr)
		}
	}
	// -at folds the file; the state view needs neither a config nor a
	// router.
	state, stderr, err := runCmd(t, "replay", "-file", file, "-at", "2026-11-29T03:12:30Z", "-view", "state")
	if err != nil || !strings.Contains(state, "drain") {
		t.Fatalf("replay -at -view state: %v\n%s%s", err, state, stderr)
	}
	bans, stderr, err := runCmd(t, "replay", "-file", file, "-at", "2026-11-29T03:12:30Z", "-view", "bans")
	if err != nil || !strings.Contains(bans, "drain") {
		t.Fatalf("replay -at -view bans: %v\n%s%s", err, bans, stderr)
	}
	before, _, err := runCmd(t, "replay", "-file", file, "-at", time.Date(2026, 11, 29, 3, 11, 30, 0, time.UTC).Format(time.RFC3339), "-view", "bans")
	if err != nil || strings.Contains(before, "drain") {
		t.Fatalf("replay -at before the ban: %v\n%s", err, before)
	}
}

func TestReplayRejectsBadFlags(t *testing.T) {
	file := writeSmallExport(t)
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

// filterExport is an exported file for the filter flags: three events that
// pass -credential cred-a -model gpt-4o -kind outcome,ban -since 03:10
// -until 03:13 (the window's ends included), and one for each flag to
// leave out.
var filterExport = []string{
	// before -since
	0: `{"seq":1,"v":1,"kind":"outcome.recorded","at":"2026-11-29T03:00:00Z","outcome":{"credential":"cred-a","model":"gpt-4o","status":429,"class":"rate_limited","latency_ms":90,"attempt":1}}`,
	// kept: at -since
	1: `{"seq":2,"v":1,"kind":"outcome.recorded","at":"2026-11-29T03:10:00Z","outcome":{"credential":"cred-a","model":"gpt-4o","status":429,"class":"rate_limited","latency_ms":80,"attempt":1}}`,
	// another credential
	2: `{"seq":2,"index":1,"v":1,"kind":"outcome.recorded","at":"2026-11-29T03:10:01Z","outcome":{"credential":"cred-b","model":"gpt-4o","status":200,"class":"ok","latency_ms":120,"attempt":1}}`,
	// another model
	3: `{"seq":2,"index":2,"v":1,"kind":"outcome.recorded","at":"2026-11-29T03:10:02Z","outcome":{"credential":"cred-a","model":"gpt-5","status":200,"class":"ok","latency_ms":130,"attempt":1}}`,
	// kept
	4: `{"seq":3,"v":1,"kind":"ban.imposed","id":"f2b/cred-a/gpt-4o/2","at":"2026-11-29T03:11:00Z","ban":{"credential":"cred-a","model":"gpt-4o","origin":"fail2ban","reason":"3 x 429 (rule 429: max_attempts 3, ban 5m)","error_code":429,"since":"2026-11-29T03:11:00Z","permanent":false,"until":"2026-11-29T03:16:00Z","failures":3,"cause_seq":2}}`,
	// another kind
	5: `{"seq":4,"v":1,"kind":"cooldown.started","id":"cooldown/cred-a/gpt-4o/2","at":"2026-11-29T03:12:00Z","cooldown":{"credential":"cred-a","model":"gpt-4o","until":"2026-11-29T03:12:30Z","status":429,"cause_seq":2}}`,
	// kept: credential-wide, at -until
	6: `{"seq":5,"v":1,"kind":"ban.imposed","id":"admin/1","at":"2026-11-29T03:13:00Z","ban":{"credential":"cred-a","model":"*","origin":"admin","reason":"admin: drain","error_code":0,"since":"2026-11-29T03:13:00Z","permanent":true}}`,
	// after -until
	7: `{"seq":6,"v":1,"kind":"outcome.recorded","at":"2026-11-29T03:30:00Z","outcome":{"credential":"cred-a","model":"gpt-4o","status":200,"class":"ok","latency_ms":100,"attempt":1}}`,
}

// replay's filter flags pick the events of an exported file, and -format
// jsonl writes each one out as the file holds it: each flag alone leaves
// out its event, all of them together keep the three that pass them all.
func TestReplayFilterFlagsPickTheEvents(t *testing.T) {
	file := filepath.Join(t.TempDir(), "incident.jsonl")
	writeFile(t, file, strings.Join(filterExport, "\n")+"\n")
	window := []string{"-since", "2026-11-29T03:10:00Z", "-until", "2026-11-29T03:13:00Z"}
	for _, tc := range []struct {
		flags []string
		want  []int // filterExport's lines, in order
	}{
		{[]string{"-credential", "cred-a"}, []int{0, 1, 3, 4, 5, 6, 7}},
		{[]string{"-model", "gpt-4o"}, []int{0, 1, 2, 4, 5, 6, 7}},
		{[]string{"-kind", "outcome,ban"}, []int{0, 1, 2, 3, 4, 6, 7}},
		{window, []int{1, 2, 3, 4, 5, 6}},
		{append([]string{"-credential", "cred-a", "-model", "gpt-4o", "-kind", "outcome,ban"}, window...), []int{1, 4, 6}},
	} {
		t.Run(strings.Join(tc.flags, " "), func(t *testing.T) {
			args := append([]string{"replay", "-file", file, "-format", "jsonl"}, tc.flags...)
			out, stderr, err := runCmd(t, args...)
			if err != nil {
				t.Fatalf("replay: %v\n%s", err, stderr)
			}
			var want strings.Builder
			for _, i := range tc.want {
				want.WriteString(filterExport[i] + "\n")
			}
			if out != want.String() {
				t.Fatalf("replay %q wrote:\n%s\nwant:\n%s", tc.flags, out, want.String())
			}
		})
	}
}

// replayShows runs replay over the log of the config at path and checks
// that its timeline holds every line part in want; it returns the timeline.
func replayShows(t *testing.T, path string, want ...string) string {
	t.Helper()
	timeline, stderr, err := runCmd(t, "replay", "-config", path)
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, stderr)
	}
	for _, w := range want {
		if !strings.Contains(timeline, w) {
			t.Errorf("the timeline does not say %q:\n%s", w, timeline)
		}
	}
	return timeline
}
