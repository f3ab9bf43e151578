package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airouter/airouter/sysmon"
)

// serve starts itself again, as the same process and under the name it
// was started by, with the runtime's monitor kept polling (sysmon.Setting
// added to the GODEBUG it was given, or alone without one) and says so in
// its log; its event log's server process does not get the setting. An
// operator's own schedtrace stays as it was set, in both.
func testSteadyMonitor(t *testing.T, bin string) {
	up := newUpstream(t, 200)
	// Started through a symlink, whose name the process keeps.
	link := filepath.Join(t.TempDir(), "airouter-link")
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ given, router, server, log string }{
		{"", sysmon.Setting, "", "the runtime's monitor polls steadily"},
		{"panicnil=0", "panicnil=0," + sysmon.Setting, "panicnil=0", "the runtime's monitor polls steadily"},
		{"schedtrace=0", "schedtrace=0", "schedtrace=0", "the runtime's monitor sleeps between requests"},
		{"schedtrace=600000", "schedtrace=600000", "schedtrace=600000", "GODEBUG sets schedtrace"},
	} {
		t.Run("GODEBUG="+c.given, func(t *testing.T) {
			t.Setenv("GODEBUG", c.given)
			if c.given == "" {
				os.Unsetenv("GODEBUG") // t.Setenv puts it back
			}
			cfgPath, port := killConfig(t, tempStore(t), up)
			p := startServe(t, link, cfgPath, port)
			pid := p.cmd.Process.Pid
			if got := godebugOf(t, pid); got != c.router {
				t.Errorf("the router (pid %d, the one started) runs with GODEBUG %q, want %q", pid, got, c.router)
			}
			if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(comm)) != "airouter-link" {
				t.Errorf("the router is named %q, want the name it was started by", comm)
			}
			sp := p.serverProcess(t)
			if sp == nil {
				t.Fatal("/health names no server process")
			}
			if got := godebugOf(t, sp.PID); got != c.server {
				t.Errorf("the server process runs with GODEBUG %q, want %q", got, c.server)
			}
			if !strings.Contains(p.logs.String(), c.log) {
				t.Errorf("the log lacks %q", c.log)
			}
		})
	}
}

// godebugOf is the GODEBUG pid runs with (the first in its environment).
func godebugOf(t *testing.T, pid int) string {
	t.Helper()
	vars := environOf(t, pid)
	if i := slices.IndexFunc(vars, func(v string) bool { return strings.HasPrefix(v, "GODEBUG=") }); i >= 0 {
		return strings.TrimPrefix(vars[i], "GODEBUG=")
	}
	return ""
}
