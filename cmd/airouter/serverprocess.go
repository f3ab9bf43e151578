package main

import (
	"os"
	"os/exec"

	"github.com/airouter/airouter/sysmon"
	"github.com/airouter/airouter/transport/eventlog"
)

// serverProcess starts this executable again as the event log's server
// process. On Linux it is the running image (/proc/self/exe), so a binary
// replaced on disk by an upgrade restarts the server of its own version.
// Its argv names the router's binary; its kernel name (comm, as top and
// pgrep without -f show it) is "exe". Its environment is the part of the
// router's it needs (eventlog.ProcessEnv): no provider or master keys, and
// not the setting that keeps the router's runtime monitor polling
// (sysmon.Without): the server is idle between the router's batches.
func serverProcess() *exec.Cmd {
	exe := "/proc/self/exe"
	if _, err := os.Stat(exe); err != nil {
		if exe, err = os.Executable(); err != nil {
			exe = os.Args[0]
		}
	}
	cmd := exec.Command(exe, eventlog.ProcessArg)
	cmd.Args[0] = os.Args[0]
	cmd.Env = sysmon.Without(eventlog.ProcessEnv(os.Environ()))
	return cmd
}
