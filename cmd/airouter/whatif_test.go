package main

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/decisions"
	"github.com/airouter/airouter/internal/testkit"
	"github.com/airouter/airouter/whatif"
)

var updateWhatif = flag.Bool("update-whatif", false, "rewrite testdata/whatif/scenario.jsonl from the router run of TestWhatifOverARecordedRouterRun")

// whatifScenario is where the recorded run is exported for whatif's golden
// tests.
const whatifScenario = "../../testdata/whatif/scenario.jsonl"

// A real router on a fake clock bans a credential that answers 429 twice
// (3 x 429 under max_attempts 3, ban 10m, the ban expiring in between);
// whatif over its stopped store then says what other rules would have done:
// the recorded policy changes nothing, a stricter one bans longer and
// earlier, a laxer one removes both bans.
func TestWhatifOverARecordedRouterRun(t *testing.T) {
	bad := newUpstream(t, 429)
	good := newUpstream(t, 200)
	path, cfg := replayConfig(t, eventsAt(tempStore(t), "file", ""),
		"fail2ban:\n  max_attempts: 3\n  ban_duration: 10m\n", bad, good)
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC))
	r := startOn(t, cfg, clock)
	banned := func() bool {
		_, b := r.live.Load().Blocked("cred-a", "gpt-test", clock.Now())
		return b
	}
	streak := func() {
		for i := 0; !banned(); i++ {
			if i == 50 {
				t.Fatal("after 50 requests cred-a is not banned")
			}
			clock.Advance(time.Second)
			if status, _, body := chat(t, r); status != 200 {
				t.Fatalf("chat: %d %s", status, body)
			}
			settle(t, r)
		}
	}
	streak()
	clock.Advance(10*time.Minute + decisions.DefaultSweepEvery)
	testkit.Eventually(t, "the ban to expire", func() bool { return !banned() })
	settle(t, r)
	streak()
	settle(t, r)
	r.stop()

	if *updateWhatif {
		out, stderr, err := runCmd(t, "export", "-config", path)
		if err != nil {
			t.Fatalf("export: %v\n%s", err, stderr)
		}
		if err := os.WriteFile(whatifScenario, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	weigh := func(policy string, window ...string) whatif.Result {
		t.Helper()
		args := append([]string{"whatif", "-config", path, "-policy", policy, "-format", "json"}, window...)
		out, stderr, err := runCmd(t, args...)
		if err != nil {
			t.Fatalf("whatif -policy %s: %v\n%s", policy, err, stderr)
		}
		var res whatif.Result
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("whatif JSON: %v\n%s", err, out)
		}
		return res
	}
	// The router's own config as NEW.yaml: the same policy, so no change.
	same := weigh(path)
	if !same.Diff.Empty() || len(same.Actual.Bans) != 2 || len(same.Proposed.Bans) != 2 || len(same.Diverted) != 0 {
		t.Fatalf("the recorded policy changes bans: %+v", same)
	}
	if same.Outcomes < 6 || same.Actual.PairMinutes < 10 || same.Actual.PairMinutes > 11 || same.Assumption != whatif.Assumption {
		t.Fatalf("outcomes %d, pair-minutes %v, assumption %q", same.Outcomes, same.Actual.PairMinutes, same.Assumption)
	}

	dir := t.TempDir()
	strict := filepath.Join(dir, "strict.yaml")
	writeFile(t, strict, "fail2ban:\n  max_attempts: 1\n  ban_duration: 1h\n")
	res := weigh(strict)
	if len(res.Diff.Changed) != 1 || len(res.Diff.Removed) != 1 || len(res.Diff.Added) != 0 {
		t.Fatalf("stricter rule: diff = %+v", res.Diff)
	}
	ch := res.Diff.Changed[0]
	if !ch.Proposed.Since.Before(ch.Actual.Since) || !strings.Contains(ch.Proposed.Reason, "ban 1h") {
		t.Fatalf("stricter rule: changed %+v -> %+v", ch.Actual, ch.Proposed)
	}
	if res.Proposed.PairMinutes <= res.Actual.PairMinutes || len(res.Diverted) == 0 || res.Failed != 0 {
		t.Fatalf("stricter rule: pair-minutes %v -> %v, diverted %+v", res.Actual.PairMinutes, res.Proposed.PairMinutes, res.Diverted)
	}
	for _, d := range res.Diverted {
		if d.Credential != "cred-a" || d.Outcome != whatif.WentElsewhere || len(d.To) != 1 || d.To[0] != "cred-b" {
			t.Fatalf("diverted %+v", d)
		}
	}

	// A window from between the streaks starts from the state then, as
	// recorded: the first ban is carried in both runs, the second streak
	// is decided again.
	res = weigh(strict, "-since", "2026-11-29T03:05:00Z")
	if len(res.Actual.Bans) != 2 || !res.Actual.Bans[0].Since.Equal(same.Actual.Bans[0].Since) ||
		len(res.Diff.Changed) != 1 || len(res.Diff.Added)+len(res.Diff.Removed) != 0 ||
		!res.Window.From.Equal(time.Date(2026, 11, 29, 3, 5, 0, 0, time.UTC)) || res.Outcomes >= same.Outcomes {
		t.Fatalf("stricter rule from 03:05: %+v", res)
	}

	lax := filepath.Join(dir, "lax.yaml")
	writeFile(t, lax, "fail2ban:\n  max_attempts: 50\n")
	res = weigh(lax)
	if len(res.Diff.Removed) != 2 || len(res.Proposed.Bans) != 0 || res.Proposed.PairMinutes != 0 {
		t.Fatalf("laxer rule: %+v", res.Diff)
	}

	text, _, err := runCmd(t, "whatif", "-config", path, "-policy", lax)
	if err != nil || !strings.Contains(text, whatif.Assumption) || !strings.Contains(text, "- removed  cred-a/gpt-test") {
		t.Fatalf("text: %v\n%s", err, text)
	}
}

// Bad flags and a bad policy are clear errors naming what is wrong.
func TestWhatifRejectsBadInput(t *testing.T) {
	file := writeSmallExport(t)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	writeFile(t, bad, "fail2ban:\n  max_attempts: -2\n")
	good := filepath.Join(t.TempDir(), "good.yaml")
	writeFile(t, good, "fail2ban:\n  max_attempts: 2\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"whatif", "-file", file}, "-policy FILE is required"},
		{[]string{"whatif", "-file", file, "-policy", bad}, "fail2ban.max_attempts: -2 must be > 0"},
		{[]string{"whatif", "-file", file, "-policy", bad, "-format", "xml"}, `-format "xml"`},
		{[]string{"whatif", "-file", file, "-policy", "/nonexistent.yaml"}, "read policy"},
		{[]string{"whatif", "-file", file, "-policy", good, "-since", "yesterday"}, "-since"},
	} {
		_, _, err := runCmd(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}
