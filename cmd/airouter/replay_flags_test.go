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
