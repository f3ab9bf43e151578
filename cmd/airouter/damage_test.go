package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/adminapi"
	"github.com/airouter/airouter/internal/testkit"
)

// damageBans is how many credentials the damage tests ban, one event each.
const damageBans = 20

// bannedRouter starts a router on store with damageBans+1 credentials and
// bans all but the last through the admin API (one stays usable, so a
// degraded router is not unhealthy).
func bannedRouter(t *testing.T, store string) (*running, []*upstream) {
	t.Helper()
	ups := slices.Repeat([]*upstream{newUpstream(t, 200)}, damageBans+1)
	r := start(t, testConfig(t, store, "file", "", ups...))
	for i := range damageBans {
		status, _, body := r.do(t, "POST", "/api/ban", testMasterKey,
			map[string]string{"credential": fmt.Sprintf("cred-%c", 'a'+i), "model": "gpt-test", "ttl": "1h", "reason": "damage"})
		if status != 200 {
			t.Fatalf("ban %d: %d %s", i, status, body)
		}
	}
	return r, ups
}

// truncateNewestBlock cuts the events stream's newest block file in store
// to half its size, a few bytes into a record.
func truncateNewestBlock(t *testing.T, store string) {
	t.Helper()
	newest := newestBlock(t, store)
	fi, err := os.Stat(newest)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(newest, fi.Size()/2+7); err != nil {
		t.Fatal(err)
	}
}

// startLogged starts a router on cfg whose log lines also go to logs.
func startLogged(t *testing.T, store string, ups []*upstream, logs *testkit.Buffer) *running {
	t.Helper()
	logger := hclog.New(&hclog.LoggerOptions{Output: io.MultiWriter(logs, testkit.Writer(t)), Level: hclog.Info})
	return startReplicaLogging(t, testConfig(t, store, "file", "", ups...), logger)
}

// lossReported checks the three places a loss must show: an ERROR line,
// /health's log section (status degraded) and the metric. It returns the
// missing count /health reports.
func lossReported(t *testing.T, r *running, logs *testkit.Buffer) adminapi.LogHealth {
	t.Helper()
	lines := logs.Lines("the event log lost events")
	if len(lines) == 0 || !strings.Contains(lines[0], "[ERROR]") || !strings.Contains(lines[0], "missing_from_seq=") {
		t.Errorf("no ERROR line names the loss: %q", lines)
	}
	_, _, body := r.do(t, "GET", "/health", "", nil)
	var h adminapi.Health
	if err := json.Unmarshal(body, &h); err != nil {
		t.Fatalf("/health: %v: %s", err, body)
	}
	if h.Log.MissingEvents == 0 || h.Log.MissingFromSeq == 0 || h.Status != adminapi.StatusDegraded {
		t.Errorf("/health = status %q, log %+v: want degraded with the missing events", h.Status, h.Log)
	}
	_, _, metrics := r.do(t, "GET", "/metrics", "", nil)
	want := fmt.Sprintf("airouter_log_missing_events %d", h.Log.MissingEvents)
	if !regexp.MustCompile(`(?m)^` + want + `$`).Match(metrics) {
		t.Errorf("/metrics lacks %q:\n%s", want, grepLines(string(metrics), "missing"))
	}
	return h.Log
}

// A crash (the store's files as the killed process left them, no clean
// shutdown) followed by a truncated last block: the router starts, and
// says how many events are missing and from which sequence; what it lost
// plus what it kept is every ban acknowledged.
func TestTruncatedBlockAfterACrashIsReported(t *testing.T) {
	store := tempStore(t)
	r, ups := bannedRouter(t, store)
	crashed := tempStore(t)
	testkit.CopyDir(t, store, crashed) // a SIGKILL-like stop
	r.stop()
	truncateNewestBlock(t, crashed)

	var logs testkit.Buffer
	r2 := startLogged(t, crashed, ups, &logs)
	lh := lossReported(t, r2, &logs)
	kept := len(r2.live.Load().Bans(time.Now()))
	// Messages other than the bans (a replica's heartbeat) may be in the
	// stream too: every ban is kept or among the missing, and the kept ones
	// all lie before the loss.
	if kept == damageBans || uint64(kept)+lh.MissingEvents < damageBans || lh.MissingFromSeq < uint64(kept)+1 {
		t.Fatalf("kept %d bans, %d reported missing from seq %d: want the %d acknowledged split between them",
			kept, lh.MissingEvents, lh.MissingFromSeq, damageBans)
	}
}

// After a clean stop the checkpoint holds the whole state: the router
// starts from it at once despite the truncated block, with every ban, and
// still reports what the stream lost.
func TestTruncatedBlockAfterACleanStopStartsFromTheCheckpoint(t *testing.T) {
	store := tempStore(t)
	r, ups := bannedRouter(t, store)
	r.stop()
	truncateNewestBlock(t, store)

	var logs testkit.Buffer
	begin := time.Now()
	r2 := startLogged(t, store, ups, &logs)
	if took := time.Since(begin); took > 20*time.Second {
		t.Errorf("start took %s", took)
	}
	lossReported(t, r2, &logs)
	if kept := len(r2.live.Load().Bans(time.Now())); kept != damageBans {
		t.Fatalf("kept %d bans, want the checkpoint's %d", kept, damageBans)
	}
	if n := len(logs.Lines("replaced a stalled event consumer")); n > 0 {
		t.Errorf("%d stalled-consumer replacements: the missing tail is not a stall", n)
	}
}

// export and replay on a damaged store end at once with an error naming
// the loss.
func TestToolsOnADamagedStoreFail(t *testing.T) {
	store := tempStore(t)
	r, _ := bannedRouter(t, store)
	crashed := tempStore(t)
	testkit.CopyDir(t, store, crashed)
	r.stop()
	truncateNewestBlock(t, crashed)
	path := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, path, "server:\n  master_key: "+testMasterKey+"\nevents:\n  store_dir: "+crashed+"\n"+
		"credentials:\n  - name: cred-a\n    type: openai\n    api_key: sk-upstream-secret-0\n    base_url: http://127.0.0.1:9/v1\n")
	for _, args := range [][]string{{"export"}, {"replay"}, {"replay", "-at", time.Now().UTC().Format(time.RFC3339)}} {
		_, stderr, err := runCmd(t, append(args, "-config", path)...)
		if err == nil || !strings.Contains(err.Error(), "lost") || !strings.Contains(err.Error(), "from sequence") {
			t.Errorf("%v on a damaged store: err %v, stderr %q; want the loss named", args, err, stderr)
		}
	}
}

// tail on a router that runs on a damaged store (through events.listen)
// ends at once with an error naming the loss.
func TestTailOnADamagedLogFails(t *testing.T) {
	store := tempStore(t)
	r, ups := bannedRouter(t, store)
	r.stop()
	truncateNewestBlock(t, store)
	path, cfg := replayConfig(t, eventsAt(store, "file", freeListen(t)), "", ups...)
	start(t, cfg)
	ctx, cancel := context.WithTimeout(testkit.Context(t), 20*time.Second)
	defer cancel()
	var out, errb testkit.Buffer
	err := dispatch(ctx, []string{"tail", "-config", path}, &out, &errb)
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "lost") || !strings.Contains(err.Error(), "from sequence") {
		t.Fatalf("tail on a damaged log: err %v, stderr %q; want the loss named at once", err, errb.String())
	}
}
