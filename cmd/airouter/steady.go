package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/airouter/airouter/sysmon"
)

// steadyMonitor starts `serve` again, as the same process (execve keeps
// its pid, its standard streams and its arguments), with the runtime's
// monitor kept from its deep sleep (package sysmon), unless the
// environment's GODEBUG already names schedtrace. It returns only when it
// does not start it again: the setting is in place, the operator chose
// another, or the exec failed, which it says on stderr before the router
// runs with the runtime's default (serve's start-up log names the mode).
func steadyMonitor(stderr *os.File) {
	env, added := sysmon.With(os.Environ())
	if !added {
		return
	}
	exe, err := startedAs()
	if err == nil {
		err = syscall.Exec(exe, os.Args, env)
	}
	fmt.Fprintf(stderr, "airouter: serving with the runtime's default monitor: starting again with GODEBUG %s failed: %v\n", sysmon.Setting, err)
}

// startedAs is the path this process was started by, when it names this
// executable: the kernel names a process after the file it execs, so a
// symlink's name (what pgrep and top match) stays the process's name.
// Otherwise it is the executable's own path.
func startedAs() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	if p, err := exec.LookPath(os.Args[0]); err == nil {
		a, errA := os.Stat(p)
		b, errB := os.Stat(self)
		if errA == nil && errB == nil && os.SameFile(a, b) {
			return p, nil
		}
	}
	return self, nil
}
