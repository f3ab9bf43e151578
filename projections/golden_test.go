package projections

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/eventjson"
)

var update = flag.Bool("update", false, "rewrite testdata/projections/*.golden.json (views and changes) and testdata/policy/*/{decisions.jsonl,view.json}")

const goldenDir = "../testdata/projections"

// goldenCase is one testdata/projections/<name>.events.jsonl: one event per
// line as eventjson.Encode writes it, numbered by line, judged at the time in
// <name>.at or else at the last event's time.
type goldenCase struct {
	name   string
	events []domain.Event
	at     time.Time
}

func loadGoldenCases(t *testing.T) []goldenCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.events.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden cases in %s (%v)", goldenDir, err)
	}
	var cases []goldenCase
	for _, f := range files {
		c := goldenCase{name: strings.TrimSuffix(filepath.Base(f), ".events.jsonl")}
		c.events = readEvents(t, f)
		if len(c.events) == 0 {
			t.Fatalf("%s: no events", f)
		}
		c.at = c.events[len(c.events)-1].At
		if b, err := os.ReadFile(filepath.Join(goldenDir, c.name+".at")); err == nil {
			if c.at, err = time.Parse(time.RFC3339, strings.TrimSpace(string(b))); err != nil {
				t.Fatalf("%s.at: %v", c.name, err)
			}
		}
		cases = append(cases, c)
	}
	return cases
}

func readEvents(t *testing.T, path string) []domain.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evs []domain.Event
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		ev, err := eventjson.Decode(sc.Bytes())
		if err != nil {
			t.Fatalf("%s:%d: %v", path, line, err)
		}
		if ev.Valid() == nil {
			// Fixtures are what the producer writes; keep them so.
			enc, err := eventjson.Encode(ev)
			if err != nil || !bytes.Equal(enc, sc.Bytes()) {
				t.Fatalf("%s:%d: not as eventjson.Encode writes it:\n got %s\nwant %s", path, line, sc.Bytes(), enc)
			}
		}
		ev.Seq = uint64(line)
		evs = append(evs, ev)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}

func TestGolden(t *testing.T) {
	for _, c := range loadGoldenCases(t) {
		t.Run(c.name, func(t *testing.T) {
			got := viewJSON(t, fold(c.events).Snapshot(), c.at)
			checkGolden(t, filepath.Join(goldenDir, c.name+".golden.json"), got)
		})
	}
}

// TestGoldenChanges checks what ApplyReport reports for every golden log
// against <name>.changes.golden.json: each event that changed a ban, with
// its position and kind, and its changes in order.
func TestGoldenChanges(t *testing.T) {
	type changed struct {
		Seq   uint64      `json:"seq"`
		Index uint32      `json:"index,omitempty"`
		Kind  domain.Kind `json:"kind"`
		Bans  []BanChange `json:"bans"`
	}
	for _, c := range loadGoldenCases(t) {
		t.Run(c.name, func(t *testing.T) {
			s, out := NewState(), []changed{}
			for _, ev := range c.events {
				var ch Change
				s, ch = ApplyReport(s, ev)
				if len(ch.Bans) > 0 {
					out = append(out, changed{Seq: ev.Seq, Index: ev.Index, Kind: ev.Kind, Bans: ch.Bans})
				}
			}
			got, err := json.MarshalIndent(out, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join(goldenDir, c.name+".changes.golden.json"), append(got, '\n'))
		})
	}
}

// checkGolden compares got with the golden file at path, or rewrites the
// file under -update. A difference fails the test and goes on, so one run
// shows every file that differs.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		test, _, _ := strings.Cut(t.Name(), "/")
		t.Fatalf("%v (run go test ./projections -run %s -update)", err, test)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n got:\n%s\nwant:\n%s", path, got, want)
	}
}

// TestGoldenReplays checks, for every golden log, that replaying gives the
// same bytes every time, that a checkpoint at any position followed by the
// rest of the log gives the same view, and that Live's incremental
// snapshots match a snapshot built from scratch.
func TestGoldenReplays(t *testing.T) {
	for _, c := range loadGoldenCases(t) {
		t.Run(c.name, func(t *testing.T) {
			want := viewJSON(t, fold(c.events).Snapshot(), c.at)
			if again := viewJSON(t, fold(c.events).Snapshot(), c.at); !bytes.Equal(again, want) {
				t.Fatalf("a second replay differs:\n%s\n%s", want, again)
			}
			for k := 0; k <= len(c.events); k++ {
				data, err := fold(c.events[:k]).MarshalCheckpoint()
				if err != nil {
					t.Fatal(err)
				}
				s, err := UnmarshalCheckpoint(data)
				if err != nil {
					t.Fatalf("checkpoint after %d events: %v", k, err)
				}
				for _, ev := range c.events[k:] {
					s = Apply(s, ev)
				}
				if got := viewJSON(t, s.Snapshot(), c.at); !bytes.Equal(got, want) {
					t.Fatalf("checkpoint after %d events, then the rest:\n%s\nwant\n%s", k, got, want)
				}
			}
			live := NewLive(nil)
			if live.Load().Seq() != 0 {
				t.Fatal("a fresh Live is not at seq 0")
			}
			for i, ev := range c.events {
				live.Apply(ev, uint64((len(c.events)-i-1)%3))
				if live.Load().Seq() == ev.Seq {
					full := viewJSON(t, fold(c.events[:i+1]).Snapshot(), c.at)
					if got := viewJSON(t, live.Load(), c.at); !bytes.Equal(got, full) {
						t.Fatalf("live snapshot after %d events:\n%s\nwant\n%s", i+1, got, full)
					}
				}
			}
			if live.Load().Seq() != c.events[len(c.events)-1].Seq {
				t.Fatalf("live stopped at seq %d", live.Load().Seq())
			}
		})
	}
}
