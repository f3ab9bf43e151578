package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/airouter/airouter/internal/testkit"
	"github.com/airouter/airouter/transport/eventlog"
)

// serverProcess is /health's log.server_process of p, nil when absent.
func (p *serveProc) serverProcess(t *testing.T) *struct{ PID, Restarts int } {
	t.Helper()
	st, body, err := p.send("GET", "/health", nil)
	var h struct {
		Log struct {
			ServerProcess *struct{ PID, Restarts int } `json:"server_process"`
		} `json:"log"`
	}
	if err != nil || (st != http.StatusOK && st != http.StatusServiceUnavailable) || json.Unmarshal(body, &h) != nil {
		t.Fatalf("/health: %d %v %s", st, err, body)
	}
	return h.Log.ServerProcess
}

// parentOf is pid's parent PID (/proc/<pid>/stat), 0 when pid is gone.
func parentOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// environOf is pid's environment (/proc/<pid>/environ), one variable an
// element.
func environOf(t *testing.T, pid int) []string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(b), "\x00")
}

// testServerProcess runs the built binary on the default
// events.server_process: its file store's server is a child process
// running `airouter serve-events`, named in /health; it ignores the stop
// and reload signals meant for the router. Killed, the child is
// started again, /health and /metrics count the restart, a ban made then
// is stored and served, and a SIGTERM stops both processes.
func testServerProcess(t *testing.T, bin string) {
	up := newUpstream(t, 200)
	cfgPath, port := killConfig(t, tempStore(t), up)
	const key, setting = "OPENAI_API_KEY=sk-test-not-for-the-server-0123456789", "GOTRACEBACK=all"
	p := startServeEnv(t, bin, cfgPath, port, key, setting)
	sp := p.serverProcess(t)
	if sp == nil || parentOf(sp.PID) != p.cmd.Process.Pid || sp.Restarts != 0 {
		t.Fatalf("/health log.server_process %+v, want a child of %d", sp, p.cmd.Process.Pid)
	}
	if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", sp.PID)); !strings.Contains(string(cmdline), eventlog.ProcessArg) {
		t.Fatalf("the server process runs %q", cmdline)
	}
	// The router's keys stay with the router; the runtime's settings pass.
	// Only names are printed: the environment may hold the machine's own secrets.
	vars := environOf(t, sp.PID)
	if slices.Contains(vars, key) {
		t.Fatalf("the server process has the router's OPENAI_API_KEY (%d variables in all)", len(vars))
	}
	if !slices.Contains(vars, setting) {
		t.Fatalf("the server process lacks %s (%d variables in all)", setting, len(vars))
	}
	first := sp.PID
	// A service manager's SIGTERM to the whole group and a reload's SIGHUP
	// are the router's to handle: the server process ignores them.
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT} {
		if err := syscall.Kill(first, sig); err != nil {
			t.Fatal(err)
		}
	}
	if st, _, err := p.ban(pair{"cred-b", "m01"}); err != nil || st != http.StatusOK {
		t.Fatalf("a ban after the signals: %d %v", st, err)
	}
	if sp = p.serverProcess(t); sp == nil || sp.PID != first || sp.Restarts != 0 {
		t.Fatalf("after SIGTERM, SIGHUP and SIGINT the server process is %+v, want %d unrestarted", sp, first)
	}
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "a new server process in /health", func() bool {
		sp = p.serverProcess(t)
		return sp != nil && sp.PID != first && sp.Restarts == 1
	})
	pr := pair{"cred-a", "m00"}
	testkit.Eventually(t, "a ban stored after the restart", func() bool {
		st, _, err := p.ban(pr)
		return err == nil && st == http.StatusOK
	})
	if !p.bans(t)[pr] {
		t.Errorf("/api/bans after the restart does not list %v", pr)
	}
	if st, _, err := p.send("POST", "/v1/chat/completions", map[string]any{
		"model": killLive, "messages": []map[string]string{{"role": "user", "content": "hi"}}}); err != nil || st != http.StatusOK {
		t.Errorf("a request after the restart: %d %v", st, err)
	}
	_, metrics, err := p.send("GET", "/metrics", nil)
	if err != nil || !strings.Contains(string(metrics), "airouter_log_server_restarts_total 1\n") {
		t.Errorf("/metrics lacks airouter_log_server_restarts_total 1 (%v)", err)
	}
	if !strings.Contains(p.logs.String(), "the event log's server process exited; starting it again") {
		t.Errorf("no log line names the server process's exit:\n%s", p.logs.String())
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(t); err != nil {
		t.Fatalf("SIGTERM: the router exited with %v", err)
	}
	if syscall.Kill(sp.PID, 0) == nil {
		t.Errorf("the server process %d outlived its router (the router reaps it when it stops)", sp.PID)
	}
}
