package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/internal/testkit"
)

func joinPorts(ps []int) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, " ")
}

// clusterScript runs deploy/local-cluster.sh with arg in env, bounded.
func clusterScript(t *testing.T, env []string, arg string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join("..", "..", "deploy", "local-cluster.sh"), arg)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// readPIDs reads the script's PID file: one "pid name" a line.
func readPIDs(t *testing.T, path string) map[int]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			t.Fatalf("pid file line %q", l)
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil {
			t.Fatalf("pid file line %q: %v", l, err)
		}
		out[pid] = f[1]
	}
	return out
}

// processRunning reports whether pid is a live process (a zombie is not).
func processRunning(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(data))
	return len(f) > 2 && f[2] != "Z"
}

// deploy/local-cluster.sh starts three nats-server processes in one
// JetStream cluster and two replicas on it; traffic goes through both, a
// ban made through replica 1 is on replica 2's /api/bans, and stop ends
// every process it started, by PID.
func testLocalCluster(t *testing.T, bin string) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	p := freePorts(t, 12)
	routers := p[9:11]
	env := []string{
		"AIROUTER_CLUSTER_DIR=" + dir,
		"AIROUTER_BIN=" + bin,
		"NATS_PORTS=" + joinPorts(p[0:3]),
		"NATS_ROUTE_PORTS=" + joinPorts(p[3:6]),
		"NATS_HTTP_PORTS=" + joinPorts(p[6:9]),
		"ROUTER_PORTS=" + joinPorts(routers),
		"UPSTREAM_PORT=" + strconv.Itoa(p[11]),
		"AIROUTER_MASTER_KEY=" + testMasterKey,
	}
	began := time.Now()
	out, err := clusterScript(t, env, "start")
	t.Cleanup(func() {
		if _, err := os.Stat(filepath.Join(dir, "pids")); err == nil {
			if out, err := clusterScript(t, env, "stop"); err != nil {
				t.Errorf("stop: %v\n%s", err, out)
			}
		}
	})
	if err != nil {
		t.Fatalf("start: %v\n%s", err, out)
	}
	t.Logf("started in %s", time.Since(began).Round(time.Millisecond))
	pids := readPIDs(t, filepath.Join(dir, "pids"))
	if len(pids) != 6 {
		t.Fatalf("pid file lists %v, want three nats-servers, the upstream and two replicas", pids)
	}

	replica := func(i int) *running { return &running{url: fmt.Sprintf("http://127.0.0.1:%d", routers[i])} }
	for i := range 2 {
		st, _, body := replica(i).do(t, "POST", "/v1/chat/completions", testMasterKey, map[string]any{
			"model": "gpt-local", "messages": []map[string]string{{"role": "user", "content": "hi"}}})
		if st != 200 || !strings.Contains(string(body), "hello from stubupstream") {
			t.Fatalf("chat through replica %d = %d %s", i+1, st, body)
		}
	}
	st, _, body := replica(0).do(t, "POST", "/api/ban", testMasterKey,
		map[string]string{"credential": "local-a", "ttl": "30m", "reason": "local-cluster test"})
	if st != 200 {
		t.Fatalf("ban through replica 1 = %d %s", st, body)
	}
	testkit.Eventually(t, "the ban on replica 2's /api/bans", func() bool {
		st, _, body := replica(1).do(t, "GET", "/api/bans", testMasterKey, nil)
		return st == 200 && strings.Contains(string(body), `"local-a"`) &&
			strings.Contains(string(body), "local-cluster test")
	})

	out, err = clusterScript(t, env, "stop")
	if err != nil {
		t.Fatalf("stop: %v\n%s", err, out)
	}
	for pid, name := range pids {
		if processRunning(pid) {
			t.Errorf("%s (%d) still runs after stop", name, pid)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "pids")); !os.IsNotExist(err) {
		t.Errorf("the pid file is still there after stop (%v)", err)
	}
	t.Logf("whole run %s", time.Since(began).Round(time.Millisecond))
	logs, _ := os.ReadFile(filepath.Join(dir, "logs", "airouter-1.log"))
	if !bytes.Contains(logs, []byte("airouter ready")) {
		t.Errorf("replica 1's log has no ready line:\n%s", tail(logs, 2000))
	}
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
