package main

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/incident"
)

// export -since/-until writes exactly the events stamped inside the window,
// in log order, found by a time seek rather than a scan; replaying the file
// notes that it starts after the log's first event.
func TestExportWritesAWindow(t *testing.T) {
	store := filepath.Join(t.TempDir(), "data")
	evs := syntheticLog(t, store, 3000, 0)
	path := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, path, "server:\n  master_key: "+testMasterKey+"\nevents:\n  store_dir: "+store+"\n"+
		"credentials:\n  - name: cred-00\n    type: openai\n    api_key: sk-upstream-secret-0\n    base_url: http://127.0.0.1:9/v1\n")
	// Outcomes of different pairs queued together are stored grouped by
	// pair, so stamps are not quite in log order: take the window from
	// the sorted stamps.
	stamps := make([]time.Time, len(evs))
	for i, e := range evs {
		stamps[i] = e.At
	}
	slices.SortFunc(stamps, time.Time.Compare)
	since, until := stamps[1999], stamps[2499]
	out, stderr, err := runCmd(t, "export", "-config", path,
		"-since", since.Format(time.RFC3339Nano), "-until", until.Format(time.RFC3339Nano))
	if err != nil {
		t.Fatalf("export: %v\n%s", err, stderr)
	}
	var want []domain.Pos
	for _, e := range evs {
		if !e.At.Before(since) && !e.At.After(until) {
			want = append(want, e.Pos)
		}
	}
	r := incident.NewLineReader(strings.NewReader(out))
	var got []domain.Pos
	for {
		ev, err := r.Next()
		if err != nil {
			break
		}
		if ev.At.Before(since) || ev.At.After(until) {
			t.Fatalf("event %v at %s is outside the window", ev.Pos(), ev.At)
		}
		got = append(got, ev.Pos())
	}
	if bad, _ := r.NotJSON(); !slices.Equal(got, want) || bad != 0 {
		t.Fatalf("exported %d events %v..%v, want %d events %v..%v", len(got), got[0], got[len(got)-1], len(want), want[0], want[len(want)-1])
	}

	file := filepath.Join(t.TempDir(), "window.jsonl")
	if err := os.WriteFile(file, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	timeline, stderr, err := runCmd(t, "replay", "-file", file)
	if err != nil {
		t.Fatalf("replay -file: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "starts at log position") {
		t.Errorf("replay of a window does not note its start: %q", stderr)
	}
	sc := bufio.NewScanner(strings.NewReader(timeline))
	for sc.Scan() {
		if at, err := time.Parse(time.RFC3339, strings.Fields(sc.Text())[0]); err != nil || at.Before(since.Truncate(time.Second)) {
			t.Fatalf("timeline line outside the window: %q", sc.Text())
		}
	}
}
