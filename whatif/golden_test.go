package whatif

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/incident"
)

var update = flag.Bool("update", false, "rewrite testdata/whatif/*.golden.{json,txt}")

const fixtures = "../testdata/whatif"

// scenario reads the recorded router run (written by cmd/airouter's
// TestWhatifOverARecordedRouterRun with -update-whatif): a credential
// that answers 429 banned twice under max_attempts 3, ban 10m, the first
// ban expiring in between, while a second credential serves.
func scenario(t *testing.T) []domain.Event {
	t.Helper()
	f, err := incident.OpenFile(filepath.Join(fixtures, "scenario.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var evs []domain.Event
	if err := f.Log().Walk(context.Background(), 0, func(ev domain.Event) error {
		evs = append(evs, ev)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return evs
}

// Over the recorded scenario, each policy file gives its golden answer
// (JSON and text): the recorded policy changes nothing, a stricter rule
// bans earlier and longer, the same rule as a shadow rule (enforce: false)
// bans nothing, the stricter rule under an ejection cap the pool cannot
// afford bans nothing either, a laxer one removes the bans.
func TestWhatifGolden(t *testing.T) {
	evs := scenario(t)
	for _, tc := range []struct {
		name  string
		check func(t *testing.T, res Result)
	}{
		{"recorded", func(t *testing.T, res Result) {
			if !res.Diff.Empty() || len(res.Actual.Bans) != 2 || len(res.Diverted) != 0 {
				t.Errorf("the recorded policy changes bans: %+v", res.Diff)
			}
		}},
		{"shadow", func(t *testing.T, res Result) {
			if len(res.Diff.Added)+len(res.Diff.Changed) != 0 || len(res.Proposed.Bans) != 0 || len(res.Diverted) != 0 {
				t.Errorf("a shadow rule bans: %+v", res.Diff)
			}
		}},
		{"stricter", func(t *testing.T, res Result) {
			if len(res.Diff.Changed)+len(res.Diff.Added) == 0 || res.Proposed.PairMinutes <= res.Actual.PairMinutes || len(res.Diverted) == 0 {
				t.Errorf("a stricter rule adds no ban time: %+v", res.Diff)
			}
		}},
		{"capped", func(t *testing.T, res Result) {
			if len(res.Diff.Removed) != 2 || len(res.Proposed.Bans) != 0 || len(res.Diverted) != 0 {
				t.Errorf("an ejection cap lets bans through: %+v", res.Diff)
			}
		}},
		{"laxer", func(t *testing.T, res Result) {
			if len(res.Diff.Removed) != 2 || len(res.Proposed.Bans) != 0 {
				t.Errorf("a laxer rule keeps bans: %+v", res.Diff)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			policy, err := config.LoadPolicy(filepath.Join(fixtures, tc.name+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			res := runLog(t, Options{Policy: policy}, evs)
			tc.check(t, res)
			var js, txt bytes.Buffer
			if err := res.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			if err := res.WriteText(&txt); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name+".golden.json", js.Bytes())
			golden(t, tc.name+".golden.txt", txt.Bytes())
		})
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join(fixtures, name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n%s", name, got)
	}
}
