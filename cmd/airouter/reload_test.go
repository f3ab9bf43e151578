package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/internal/testkit"
)

const (
	oldClientKey = "sk-client-old-0123456789"
	newClientKey = "sk-client-new-0123456789"
)

// reloadFile is a config file a test rewrites between reloads: one
// credential per name (cred-a, cred-b, ...) on its upstream URL, all
// serving gpt-test, the client keys, and extra top-level YAML.
type reloadFile struct {
	path, store string
	port        int
	// credExtra is YAML added to every credential (e.g. "    rpm: 2\n").
	credExtra string
	// master is server.master_key; "" is testMasterKey.
	master string
}

func newReloadFile(t *testing.T) *reloadFile {
	dir := t.TempDir()
	return &reloadFile{path: filepath.Join(dir, "airouter.yaml"), store: filepath.Join(dir, "data"), port: 8080}
}

func (f *reloadFile) write(t *testing.T, creds map[string]string, clientKey, extra string) {
	t.Helper()
	var b strings.Builder
	master := f.master
	if master == "" {
		master = testMasterKey
	}
	fmt.Fprintf(&b, "server:\n  port: %d\n  master_key: %s\n  shutdown_delay: 0s\n  api_keys: [%s]\n", f.port, master, clientKey)
	fmt.Fprintf(&b, "events:\n  store_dir: %s\n  storage: memory\n", f.store)
	b.WriteString("credentials:\n")
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range creds {
			if !yield(n) {
				return
			}
		}
	})
	for i, n := range names {
		fmt.Fprintf(&b, "  - name: %s\n    type: openai\n    api_key: sk-upstream-secret-%d-abcdef\n    base_url: %s/v1\n", n, i, creds[n])
		b.WriteString(f.credExtra)
	}
	b.WriteString("models:\n  - name: gpt-test\n")
	b.WriteString(extra)
	writeFile(t, f.path, b.String())
}

// startFromFile starts a router from the file, as serve does, with its
// log in logs, and makes the file the one reloads read.
func startFromFile(t *testing.T, f *reloadFile, logs *testkit.Buffer) *running {
	t.Helper()
	cfg, err := config.Load(f.path)
	if err != nil {
		t.Fatal(err)
	}
	logger := hclog.New(&hclog.LoggerOptions{Output: io.MultiWriter(logs, testkit.Writer(t)), Level: hclog.Info})
	rt, err := startRouterOn(context.Background(), cfg, logger, clockwork.NewRealClock())
	if err != nil {
		t.Fatalf("start router: %v", err)
	}
	rt.reload.path = f.path
	return serveStarted(t, rt)
}

func chatWith(t *testing.T, r *running, key string) int {
	t.Helper()
	st, _, _ := r.do(t, "POST", "/v1/chat/completions", key, map[string]any{
		"model": "gpt-test", "messages": []map[string]string{{"role": "user", "content": "hi"}},
	})
	return st
}

// postReload asks for a reload and decodes the answer.
func postReload(t *testing.T, r *running) (int, map[string]any, string) {
	t.Helper()
	st, _, body := r.do(t, "POST", "/api/reload", testMasterKey, nil)
	var out map[string]any
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("reload answer %d is not JSON: %v\n%s", st, err, body)
	}
	return st, out, string(body)
}

// noReloadSecrets fails when s shows a key of the file.
func noReloadSecrets(t *testing.T, what, s string) {
	t.Helper()
	for _, k := range []string{"sk-upstream-secret", oldClientKey, newClientKey, testMasterKey} {
		if strings.Contains(s, k) {
			t.Errorf("%s shows a key (%s…):\n%s", what, k[:10], s)
		}
	}
}

func reloadsMetric(t *testing.T, r *running, result string) string {
	t.Helper()
	_, body := get(t, r.url+"/metrics")
	return grepLines(body, `airouter_config_reloads_total{result="`+result+`"}`)
}

// A reload that adds a credential routes to it, and one that rotates the
// client keys turns the old key away (401) and admits the new one; the
// answer names the change by credential and setting, never a key, and the
// reload is counted.
func TestReloadAddsACredentialAndRotatesClientKeys(t *testing.T) {
	a, b := newUpstream(t, 200), newUpstream(t, 200)
	f := newReloadFile(t)
	f.write(t, map[string]string{"cred-a": a.URL}, oldClientKey, "")
	var logs testkit.Buffer
	r := startFromFile(t, f, &logs)
	if st := chatWith(t, r, oldClientKey); st != 200 {
		t.Fatalf("before the reload: chat with the client key = %d", st)
	}

	f.write(t, map[string]string{"cred-a": a.URL, "cred-b": b.URL}, newClientKey, "fallback:\n  max_hops: 7\n")
	if st, _, _ := r.do(t, "POST", "/api/reload", oldClientKey, nil); st != 403 {
		t.Errorf("reload with a client key = %d, want 403", st)
	}
	if st, _, _ := r.do(t, "GET", "/api/reload", testMasterKey, nil); st != 405 {
		t.Errorf("GET /api/reload = %d, want 405", st)
	}
	st, ans, raw := postReload(t, r)
	if st != 200 {
		t.Fatalf("reload = %d %s", st, raw)
	}
	noReloadSecrets(t, "the reload answer", raw)
	if got := fmt.Sprint(ans["credentials"]); got != "map[added:[cred-b] changed:[] removed:[]]" {
		t.Errorf("credentials in the answer = %s", got)
	}
	if got := fmt.Sprint(ans["changed"]); got != "[server.api_keys fallback]" {
		t.Errorf("changed = %s, want [server.api_keys fallback]", got)
	}
	if got := fmt.Sprint(ans["needs_restart"]); got != "[]" {
		t.Errorf("needs_restart = %s, want []", got)
	}

	if st := chatWith(t, r, oldClientKey); st != 401 {
		t.Errorf("the old client key after the reload = %d, want 401", st)
	}
	for range 4 {
		if st := chatWith(t, r, newClientKey); st != 200 {
			t.Fatalf("the new client key after the reload = %d, want 200", st)
		}
	}
	if b.calls.Load() == 0 {
		t.Errorf("the added credential got none of 4 requests (cred-a got %d)", a.calls.Load())
	}
	_, health := get(t, r.url+"/health")
	if !strings.Contains(health, `"cred-b"`) {
		t.Errorf("/health does not list the added credential:\n%s", health)
	}
	if _, _, fb := r.do(t, "GET", "/api/fallback", testMasterKey, nil); !strings.Contains(string(fb), `"max_hops":7`) {
		t.Errorf("the default fallback settings did not follow the reload: %s", fb)
	}
	if got := reloadsMetric(t, r, "ok"); !strings.HasSuffix(got, " 1") {
		t.Errorf("reloads ok metric = %q, want 1", got)
	}
	if got := logs.Lines("config reloaded"); len(got) != 1 || !strings.Contains(got[0], "cred-b") {
		t.Errorf("the log's reload line = %q", got)
	}
	noReloadSecrets(t, "the log", logs.String())
}

// An invalid file changes nothing: the answer is 400 with every problem
// by path, the old credentials and keys keep serving, the new credential
// gets nothing, and the refusal is counted.
func TestReloadRefusesAnInvalidFileAndKeepsTheOldConfig(t *testing.T) {
	a, b := newUpstream(t, 200), newUpstream(t, 200)
	f := newReloadFile(t)
	f.write(t, map[string]string{"cred-a": a.URL}, oldClientKey, "")
	var logs testkit.Buffer
	r := startFromFile(t, f, &logs)

	f.write(t, map[string]string{"cred-a": a.URL, "cred-b": "ftp://nowhere"}, newClientKey,
		"fail2ban:\n  max_attempts: -3\n")
	st, ans, raw := postReload(t, r)
	if st != 400 {
		t.Fatalf("reload of an invalid file = %d %s", st, raw)
	}
	noReloadSecrets(t, "the refusal", raw)
	var paths []string
	for _, p := range ans["problems"].([]any) {
		paths = append(paths, p.(map[string]any)["path"].(string))
	}
	if !slices.Contains(paths, "credentials[1].base_url") || !slices.Contains(paths, "fail2ban.max_attempts") {
		t.Errorf("problems name %v, want credentials[1].base_url and fail2ban.max_attempts:\n%s", paths, raw)
	}
	if e, ok := ans["error"].(map[string]any); !ok || !strings.Contains(fmt.Sprint(e["message"]), "unchanged") {
		t.Errorf("error = %v", ans["error"])
	}

	if st := chatWith(t, r, oldClientKey); st != 200 {
		t.Errorf("the old client key after a refused reload = %d, want 200", st)
	}
	if st := chatWith(t, r, newClientKey); st != 401 {
		t.Errorf("the new client key after a refused reload = %d, want 401", st)
	}
	if b.calls.Load() != 0 || a.calls.Load() != 1 {
		t.Errorf("calls a=%d b=%d, want 1 and 0", a.calls.Load(), b.calls.Load())
	}
	if got := reloadsMetric(t, r, "error"); !strings.HasSuffix(got, " 1") {
		t.Errorf("reloads error metric = %q, want 1", got)
	}
	if got := reloadsMetric(t, r, "ok"); !strings.HasSuffix(got, " 0") {
		t.Errorf("reloads ok metric = %q, want 0", got)
	}
	if got := logs.Lines("config reload refused"); len(got) != 1 || !strings.Contains(logs.String(), "credentials[1].base_url: ") {
		t.Errorf("the log's refusal = %q, with the problems:\n%s", got, logs.String())
	}
}

// A file that changes what only a restart changes (events.store_dir,
// server.port) names those settings in the answer and in a WARN line and
// keeps their running values; the rest of the file applies.
func TestReloadNamesWhatNeedsARestart(t *testing.T) {
	a := newUpstream(t, 200)
	f := newReloadFile(t)
	f.write(t, map[string]string{"cred-a": a.URL}, oldClientKey, "")
	var logs testkit.Buffer
	r := startFromFile(t, f, &logs)
	store := f.store

	f.store, f.port = filepath.Join(t.TempDir(), "elsewhere"), 9090
	f.write(t, map[string]string{"cred-a": a.URL}, newClientKey, "")
	st, ans, raw := postReload(t, r)
	if st != 200 {
		t.Fatalf("reload = %d %s", st, raw)
	}
	if got := fmt.Sprint(ans["needs_restart"]); got != "[server.port events.store_dir]" {
		t.Errorf("needs_restart = %s, want [server.port events.store_dir]", got)
	}
	warn := logs.Lines("until a restart")
	if len(warn) != 1 || !strings.Contains(warn[0], "[WARN]") || !strings.Contains(warn[0], "events.store_dir") {
		t.Errorf("the WARN line = %q", warn)
	}
	if st := chatWith(t, r, newClientKey); st != 200 {
		t.Errorf("the rest of the file did not apply: new client key = %d", st)
	}
	if r.cfg.Events.StoreDir != store {
		t.Errorf("the running store moved to %s", r.cfg.Events.StoreDir)
	}
	// Still named on the next reload: the running value is still the old one.
	if _, ans, _ := postReload(t, r); fmt.Sprint(ans["needs_restart"]) != "[server.port events.store_dir]" {
		t.Errorf("the second reload's needs_restart = %v", ans["needs_restart"])
	}
}

// A reload keeps what a credential has spent of its rate limit: the
// windows are the credential's by name, not the config's.
func TestReloadKeepsTheRateWindows(t *testing.T) {
	a := newUpstream(t, 200)
	f := newReloadFile(t)
	f.credExtra = "    rpm: 2\n"
	f.write(t, map[string]string{"cred-a": a.URL}, oldClientKey, "")
	var logs testkit.Buffer
	r := startFromFile(t, f, &logs)
	for range 2 {
		if st := chatWith(t, r, oldClientKey); st != 200 {
			t.Fatalf("within rpm 2: %d", st)
		}
	}
	f.write(t, map[string]string{"cred-a": a.URL}, newClientKey, "")
	if st, _, raw := postReload(t, r); st != 200 {
		t.Fatalf("reload = %d %s", st, raw)
	}
	if st := chatWith(t, r, newClientKey); st != 429 {
		t.Errorf("the third request in the minute after a reload = %d, want 429 (rpm 2 spent)", st)
	}
	if n := a.calls.Load(); n != 2 {
		t.Errorf("the upstream got %d requests, want 2", n)
	}
}

// A reload that rotates the master key moves the proxy and the admin API
// to the new one together: the old one is 401 on /v1 and 403 on the admin
// endpoints.
func TestReloadRotatesTheMasterKey(t *testing.T) {
	const newMaster = "sk-test-master-rotated-0123456789"
	a := newUpstream(t, 200)
	f := newReloadFile(t)
	f.write(t, map[string]string{"cred-a": a.URL}, oldClientKey, "")
	var logs testkit.Buffer
	r := startFromFile(t, f, &logs)
	f.master = newMaster
	f.write(t, map[string]string{"cred-a": a.URL}, oldClientKey, "")
	st, ans, raw := postReload(t, r)
	if st != 200 || fmt.Sprint(ans["changed"]) != "[server.master_key]" {
		t.Fatalf("reload = %d %s", st, raw)
	}
	if strings.Contains(raw, newMaster) || strings.Contains(logs.String(), newMaster) {
		t.Errorf("the new master key shows in the answer or the log")
	}
	for _, c := range []struct {
		key        string
		chat, bans int
	}{{testMasterKey, 401, 403}, {newMaster, 200, 200}} {
		if st := chatWith(t, r, c.key); st != c.chat {
			t.Errorf("chat with the %s master key = %d, want %d", map[bool]string{true: "old", false: "new"}[c.key == testMasterKey], st, c.chat)
		}
		if st, _, _ := r.do(t, "GET", "/api/bans", c.key, nil); st != c.bans {
			t.Errorf("GET /api/bans with the %s master key = %d, want %d", map[bool]string{true: "old", false: "new"}[c.key == testMasterKey], st, c.bans)
		}
	}
}
