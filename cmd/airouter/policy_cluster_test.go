package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

// policyReplicaFile writes the config file of a replica on the JetStream
// server at natsURL whose fail2ban bans after maxAttempts 500s, and
// returns its path.
func policyReplicaFile(t *testing.T, path, natsURL, replica string, maxAttempts int, up *upstream) string {
	t.Helper()
	yaml := fmt.Sprintf(`server:
  master_key: %s
  port: 8080
  shutdown_delay: 0s
events:
  store_dir: %s
  storage: file
  nats_url: %s
  replica_id: %s
credentials:
  - name: cred-a
    type: openai
    api_key: sk-upstream-secret-0
    base_url: %s/v1
models:
  - name: gpt-test
fail2ban:
  max_attempts: %d
  ban_duration: 1h
  error_codes: [500]
`, testMasterKey, filepath.Join(t.TempDir(), "unused"), natsURL, replica, up.URL, maxAttempts)
	writeFile(t, path, yaml)
	return path
}

// startPolicyReplica starts a replica from its file, its log lines also
// in logs, with the file as the one its reloads read.
func startPolicyReplica(t *testing.T, name, path string, logs *testkit.Buffer) *running {
	t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	r := startReplicaLogging(t, cfg, hclog.New(&hclog.LoggerOptions{Name: name,
		Output: io.MultiWriter(logs, testkit.Writer(t)), Level: hclog.Info}))
	r.reload.path = path
	return r
}

// policySection is /health's policy section.
func policySection(t *testing.T, r *running) map[string]any {
	t.Helper()
	_, body, _ := health(t, r)
	var h struct {
		Policy map[string]any `json:"policy"`
	}
	if err := json.Unmarshal(body, &h); err != nil || h.Policy == nil {
		t.Fatalf("/health has no policy section (%v): %s", err, body)
	}
	return h.Policy
}

// inForce is the fingerprint of the policy r has folded as in force.
func inForce(r *running) string {
	if in := r.live.Load().Policy(); in != nil {
		return in.Fingerprint
	}
	return ""
}

// failUntilBanned sends requests through from, each failing once on
// cred-a, and checks that no replica bans before the n-th failure and
// every one bans at it, with a ban that names the n failures.
func failUntilBanned(t *testing.T, from *running, all []*running, n int) {
	t.Helper()
	for i := 1; i < n; i++ {
		chat(t, from)
		for _, r := range all {
			testkit.Eventually(t, fmt.Sprintf("failure %d folded", i), func() bool { return failures(r, "cred-a", "gpt-test", "500") == i })
		}
	}
	for _, r := range all {
		testkit.Eventually(t, "the decision queues to drain", func() bool { return r.engine.Queued() == 0 })
	}
	// A fresh event through the log: a ban decided on the failures so far
	// would be folded before it.
	banAndWait(t, from, all[len(all)-1], "cred-a", fmt.Sprintf("barrier-%d", n))
	for _, r := range all {
		if blocked(r, "cred-a", "gpt-test") {
			t.Fatalf("banned after %d failures, want a ban at %d", n-1, n)
		}
	}
	chat(t, from)
	for _, r := range all {
		testkit.Eventually(t, fmt.Sprintf("the ban at %d failures", n), func() bool { return blocked(r, "cred-a", "gpt-test") })
	}
	bans := countEvents(t, from, func(ev domain.Event) bool {
		return ev.Kind == domain.KindBanImposed && ev.Ban.Origin == domain.OriginFail2Ban && ev.Ban.Model == "gpt-test" &&
			ev.Ban.Failures == n && ev.Ban.Reason == fmt.Sprintf("%d x 500 (max_attempts %d, ban 1h)", n, n)
	})
	if bans != 1 {
		t.Fatalf("the log holds %d fail2ban bans at %d x 500 whose reason names the rule in force (max_attempts %d), want 1", bans, n, n)
	}
}

// Two replicas whose files ban at 3 and at 5 failures: the second to start
// announces its policy, both ban at 5 (the last change wins), and the
// first says in /health and its log that its file differs. replay -at
// before and after the second start prints each policy.
func TestClusterDecidesUnderTheLastAnnouncedPolicy(t *testing.T) {
	nats := testkit.StartNATS(t)
	bad := newUpstream(t, 500)
	dir := t.TempDir()
	var logsA, logsB testkit.Buffer
	a := startPolicyReplica(t, "A", policyReplicaFile(t, filepath.Join(dir, "a.yaml"), nats.URL(), "A", 3, bad), &logsA)
	fpA := a.ownFingerprint()
	if got := inForce(a); got != fpA {
		t.Fatalf("the first replica's policy is not in force: %q, want %q", got, fpA)
	}
	if p := policySection(t, a); p["in_force"] != fpA || p["file_differs"] != false {
		t.Fatalf("A's /health policy before B = %v", p)
	}
	between := time.Now().UTC()
	b := startPolicyReplica(t, "B", policyReplicaFile(t, filepath.Join(dir, "b.yaml"), nats.URL(), "B", 5, bad), &logsB)
	fpB := b.ownFingerprint()
	if fpA == fpB {
		t.Fatal("the two files' policies have one fingerprint")
	}
	testkit.Eventually(t, "B's policy in force on A", func() bool { return inForce(a) == fpB })
	if got := inForce(b); got != fpB {
		t.Fatalf("B's policy is not in force on B: %q", got)
	}

	failUntilBanned(t, a, []*running{a, b}, 5)

	if p := policySection(t, a); p["in_force"] != fpB || p["fingerprint"] != fpA || p["file_differs"] != true || p["announced_by"] != "B" {
		t.Fatalf("A's /health policy = %v, want in_force %s, fingerprint %s, file_differs", p, fpB, fpA)
	}
	if p := policySection(t, b); p["in_force"] != fpB || p["file_differs"] != false {
		t.Fatalf("B's /health policy = %v", p)
	}
	if lines := logsA.Lines("differs from this replica's config file"); len(lines) == 0 || !strings.Contains(lines[0], "[WARN]") ||
		!strings.Contains(lines[0], fpB) {
		t.Fatalf("A's log does not warn that its file differs: %q", lines)
	}
	if lines := logsB.Lines("differs from this replica's config file"); len(lines) != 0 {
		t.Fatalf("B warns of a difference: %q", lines)
	}

	for _, c := range []struct {
		at   time.Time
		fp   string
		max  int
		name string
	}{{between, fpA, 3, "before B"}, {time.Now().UTC(), fpB, 5, "after B"}} {
		replayPolicyAt(t, nats.URL(), c.at, c.name, c.fp, c.max)
	}
	announced := countEvents(t, a, func(ev domain.Event) bool {
		b, _ := json.Marshal(ev)
		if ev.Kind == domain.KindPolicyChanged && strings.Contains(string(b), "sk-upstream-secret") {
			t.Errorf("a policy.changed carries a key: %s", b)
		}
		return ev.Kind == domain.KindPolicyChanged
	})
	if announced != 2 {
		t.Fatalf("the log holds %d policy changes, want 2 (A's, then B's)", announced)
	}
	timeline, stderr, err := runCmd(t, "replay", "-nats", nats.URL(), "-kind", "policy")
	if err != nil {
		t.Fatalf("replay -kind policy: %v\n%s", err, stderr)
	}
	for _, want := range []string{"policy changed to " + fpA + " by A: max_attempts 3", "policy changed to " + fpB + " by B: max_attempts 5"} {
		if !strings.Contains(timeline, want) {
			t.Fatalf("the timeline lacks %q:\n%s", want, timeline)
		}
	}
}

// A reload on replica A that raises max_attempts from 3 to 5 announces
// A's new policy, and replica B, whose file still says 3, bans at 5;
// replay -at before and after the reload prints each policy.
func TestClusterReloadOnOneReplicaChangesThePolicyOfAll(t *testing.T) {
	nats := testkit.StartNATS(t)
	bad := newUpstream(t, 500)
	dir := t.TempDir()
	var logsA, logsB testkit.Buffer
	pathA := policyReplicaFile(t, filepath.Join(dir, "a.yaml"), nats.URL(), "A", 3, bad)
	a := startPolicyReplica(t, "A", pathA, &logsA)
	b := startPolicyReplica(t, "B", policyReplicaFile(t, filepath.Join(dir, "b.yaml"), nats.URL(), "B", 3, bad), &logsB)
	three := a.ownFingerprint()
	if b.ownFingerprint() != three || inForce(b) != three {
		t.Fatalf("two files with one policy: fingerprints %s and %s, in force on B %s", three, b.ownFingerprint(), inForce(b))
	}
	if n := countEvents(t, b, func(ev domain.Event) bool { return ev.Kind == domain.KindPolicyChanged }); n != 1 {
		t.Fatalf("the log holds %d policy changes, want 1: B's policy was already in force", n)
	}

	policyReplicaFile(t, pathA, nats.URL(), "A", 5, bad)
	before := time.Now().UTC()
	st, ans, body := postReload(t, a)
	if st != 200 {
		t.Fatalf("reload = %d %s", st, body)
	}
	five := a.ownFingerprint()
	if five == three || ans["policy_fingerprint"] != five {
		t.Fatalf("the reload answered %s; A's own policy is %s (was %s)", body, five, three)
	}
	testkit.Eventually(t, "A's reloaded policy in force on B", func() bool { return inForce(b) == five })
	if p := policySection(t, a); p["in_force"] != five || p["fingerprint"] != five || p["file_differs"] != false {
		t.Fatalf("A's /health policy after its reload = %v, want its reloaded file's %s in force", p, five)
	}

	failUntilBanned(t, a, []*running{a, b}, 5)
	replayPolicyAt(t, nats.URL(), before, "before the reload", three, 3)
	replayPolicyAt(t, nats.URL(), time.Now().UTC(), "after the reload", five, 5)
	if p := policySection(t, b); p["in_force"] != five || p["fingerprint"] != three || p["file_differs"] != true {
		t.Fatalf("B's /health policy = %v", p)
	}
}

// replayPolicyAt runs replay -at at -view policy on the log at natsURL and
// checks that it prints the policy announced on the log with fingerprint
// fp and max_attempts maxAttempts; name says which moment in a failure.
func replayPolicyAt(t *testing.T, natsURL string, at time.Time, name, fp string, maxAttempts int) {
	t.Helper()
	out, stderr, err := runCmd(t, "replay", "-nats", natsURL, "-at", at.Format(time.RFC3339Nano), "-view", "policy")
	if err != nil {
		t.Fatalf("replay -at %s -view policy: %v\n%s", name, err, stderr)
	}
	var v struct {
		Source      string           `json:"source"`
		Fingerprint string           `json:"fingerprint"`
		Policy      domain.PolicyDoc `json:"policy"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("replay -view policy %s: %v\n%s", name, err, out)
	}
	if v.Source != "log" || v.Fingerprint != fp || v.Policy.Default.MaxAttempts != maxAttempts {
		t.Fatalf("replay -at %s -view policy = %s, want %s with max_attempts %d", name, out, fp, maxAttempts)
	}
}
