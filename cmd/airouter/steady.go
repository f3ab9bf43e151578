package main

import (
	"os"
	"syscall"

	"github.com/airouter/airouter/sysmon"
)

// steadyMonitor starts `serve` again, as the same process (execve keeps
// its pid, its standard streams and its arguments), with the runtime's
// monitor kept from its deep sleep (package sysmon), unless the
// environment's GODEBUG already names schedtrace. It returns only when it
// does not start it again: the setting is in place, the operator chose
// another, or the executable cannot be found or started (then the router
// runs with the runtime's default, which serve's start-up log names).
func steadyMonitor() {
	env, added := sysmon.With(os.Environ())
	if !added {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	_ = syscall.Exec(exe, os.Args, env)
}
