package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/internal/testkit"
)

// replayConfig writes a config like testConfig's to a file, as the log
// subcommands read it, and loads it. events is the body of the events
// section (see eventsAt).
func replayConfig(t *testing.T, events, extra string, ups ...*upstream) (string, *config.Config) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "server:\n  master_key: %s\n  port: 8080\n  shutdown_delay: 0s\n", testMasterKey)
	fmt.Fprintf(&b, "events:\n%s", events)
	b.WriteString("credentials:\n")
	for i, u := range ups {
		fmt.Fprintf(&b, "  - name: cred-%c\n    type: openai\n    api_key: sk-upstream-secret-%d\n    base_url: %s/v1\n", 'a'+i, i, u.URL)
	}
	b.WriteString("models:\n  - name: gpt-test\n")
	b.WriteString(extra)
	path := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, path, b.String())
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("config: %v\n%s", err, b.String())
	}
	return path, cfg
}

// eventsAt is an events section: the store directory and storage, and a
// listen address when not "".
func eventsAt(storeDir, storage, listen string) string {
	s := fmt.Sprintf("  store_dir: %s\n  storage: %s\n", storeDir, storage)
	if listen != "" {
		s += "  listen: " + listen + "\n"
	}
	return s
}

// settle waits until everything the router has done is in the log and
// applied: the publish queue is empty, the snapshot is at the log's end,
// and no decision is waiting.
func settle(t *testing.T, r *running) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	prev := ^uint64(0)
	for {
		if err := r.log.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		// Read before the log's end: a decision still queued or being
		// published now is stored by the time it reads 0, so at or before
		// the last sequence read after it.
		queued := r.engine.Queued()
		last, err := r.log.LastSeq(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.live.WaitFor(ctx, last); err != nil {
			t.Fatal(err)
		}
		if last == prev && queued == 0 {
			return
		}
		prev = last
	}
}

// healthSample is /health as the router served it, and when.
type healthSample struct {
	name string
	at   string
	body []byte
}

func sampleHealth(t *testing.T, r *running, name string) healthSample {
	t.Helper()
	settle(t, r)
	status, _, body := r.do(t, "GET", "/health", "", nil)
	if status != 200 && status != 503 {
		t.Fatalf("/health = %d %s", status, body)
	}
	var h struct {
		Time string `json:"time"`
	}
	if err := json.Unmarshal(body, &h); err != nil || h.Time == "" {
		t.Fatalf("/health has no time: %v %s", err, body)
	}
	return healthSample{name: name, at: h.Time, body: body}
}

// logDetermined decodes a /health document and drops what the log does not
// determine: live rate counters, the log's live counters, the replicas
// heard from lately (the consumer's view, not the fold's) and the server
// process.
func logDetermined(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("health JSON: %v: %s", err, body)
	}
	for _, section := range []string{"credentials", "models"} {
		m, _ := doc[section].(map[string]any)
		for _, v := range m {
			entry := v.(map[string]any)
			delete(entry, "current_rpm")
			delete(entry, "current_tpm")
		}
	}
	lg := doc["log"].(map[string]any)
	for _, k := range []string{"connected", "last_seq", "lag", "published", "dropped", "failed", "last_error", "replicas", "replica_conflict", "server_process"} {
		delete(lg, k)
	}
	return doc
}

// chatUntil sends requests until cond holds.
func chatUntil(t *testing.T, r *running, what string, cond func() bool) {
	t.Helper()
	for i := 0; !cond(); i++ {
		if i == 50 {
			t.Fatalf("after 50 requests: no %s", what)
		}
		if status, _, body := chat(t, r); status != 200 {
			t.Fatalf("chat: %d %s", status, body)
		}
	}
}

// A scenario runs against a router while /health is sampled; afterwards
// `replay -at <sample time> -view health` prints, for every sample, the
// document the router served, in every field the log determines. Replay
// reads a copy of the store while the router runs.
func TestReplayAtReproducesHealthSamples(t *testing.T) {
	a, b, c := newUpstream(t, 200), newUpstream(t, 200), newUpstream(t, 200)
	extra := "fail2ban:\n  max_attempts: 3\n  ban_duration: 1h\n  error_code_rules:\n    - code: 429\n      max_attempts: 3\n      ban_duration: 30m\n"
	path, cfg := replayConfig(t, eventsAt(tempStore(t), "file", ""), extra, a, b, c)
	r := start(t, cfg)

	var samples []healthSample
	samples = append(samples, sampleHealth(t, r, "empty log"))

	chatUntil(t, r, "six requests", func() bool { return a.calls.Load()+b.calls.Load()+c.calls.Load() >= 6 })
	samples = append(samples, sampleHealth(t, r, "traffic"))

	a.status.Store(429)
	banned := func(cred string) func() bool {
		return func() bool {
			_, ok := r.live.Load().Blocked(cred, "gpt-test", time.Now())
			return ok
		}
	}
	// Three 429s reach the threshold; the ban follows once the log has
	// them (outcomes are published in batches, up to 20 ms later).
	failedBefore := a.calls.Load()
	chatUntil(t, r, "three 429s from cred-a", func() bool { return a.calls.Load() >= failedBefore+3 })
	testkit.Eventually(t, "the fail2ban ban of cred-a", banned("cred-a"))
	samples = append(samples, sampleHealth(t, r, "cred-a banned by fail2ban"))

	b.status.Store(502)
	before := b.calls.Load()
	chatUntil(t, r, "one 502 from cred-b", func() bool { return b.calls.Load() > before })
	b.status.Store(200)
	samples = append(samples, sampleHealth(t, r, "a 502 counted on cred-b"))

	status, _, body := r.do(t, "POST", "/api/ban", testMasterKey, map[string]any{"credential": "cred-c", "ttl": "30m", "reason": "air-scaler drain"})
	if status != 200 {
		t.Fatalf("/api/ban = %d %s", status, body)
	}
	samples = append(samples, sampleHealth(t, r, "cred-c banned by an admin"))
	_, _, bansBody := r.do(t, "GET", "/api/bans", testMasterKey, nil)
	bansAt := samples[len(samples)-1].at

	status, _, body = r.do(t, "POST", "/api/unban", testMasterKey, map[string]any{"credential": "cred-c"})
	if status != 200 {
		t.Fatalf("/api/unban = %d %s", status, body)
	}
	chatUntil(t, r, "two more requests to cred-c", func() bool { return c.calls.Load() >= 2 })
	samples = append(samples, sampleHealth(t, r, "cred-c unbanned"))

	for _, s := range samples {
		t.Run(s.name, func(t *testing.T) {
			out, stderr, err := runCmd(t, "replay", "-config", path, "-at", s.at, "-view", "health")
			if err != nil {
				t.Fatalf("replay: %v\n%s", err, stderr)
			}
			got, want := logDetermined(t, []byte(out)), logDetermined(t, s.body)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("replay -at %s -view health:\n%s\nthe router served:\n%s", s.at, out, s.body)
			}
		})
	}
	out, stderr, err := runCmd(t, "replay", "-config", path, "-at", bansAt, "-view", "bans")
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, stderr)
	}
	if out != string(bansBody) {
		t.Fatalf("replay -view bans:\n%s\nthe router served:\n%s", out, bansBody)
	}

	// The timeline says what happened and why.
	r.stop()
	timeline := replayShows(t, path,
		"cred-a  gpt-test  banned (fail2ban) 3 x 429 in ",
		", rule 429: max_attempts 3, ban 30m, until ",
		"cred-b  gpt-test  ", " x 502",
		"cred-c  *  banned (admin) air-scaler drain, until ",
		"cred-c  *  unbanned (admin), every ban of the credential",
	)

	// Export, then replay the file with no router and no config: the
	// same timeline.
	exported, stderr, err := runCmd(t, "export", "-config", path)
	if err != nil {
		t.Fatalf("export: %v\n%s", err, stderr)
	}
	file := filepath.Join(t.TempDir(), "incident.jsonl")
	if err := os.WriteFile(file, []byte(exported), 0o600); err != nil {
		t.Fatal(err)
	}
	fromFile, stderr, err := runCmd(t, "replay", "-file", file)
	if err != nil {
		t.Fatalf("replay -file: %v\n%s", err, stderr)
	}
	if fromFile != timeline {
		t.Fatalf("replay -file:\n%s\nreplay from the store:\n%s", fromFile, timeline)
	}
	// And the views from the file, given the config, match the samples too.
	s := samples[2]
	out, stderr, err = runCmd(t, "replay", "-file", file, "-config", path, "-at", s.at, "-view", "health")
	if err != nil {
		t.Fatalf("replay -file -at: %v\n%s", err, stderr)
	}
	if got, want := logDetermined(t, []byte(out)), logDetermined(t, s.body); !reflect.DeepEqual(got, want) {
		t.Fatalf("replay -file -at %s:\n%s\nthe router served:\n%s", s.at, out, s.body)
	}
}
