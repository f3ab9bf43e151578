//go:build !linux

package eventlog

import (
	"os/exec"
	"syscall"
)

// detach puts the server process in its own process group, so a terminal's
// Ctrl-C reaches the router alone. Without Linux's parent-death signal, a
// process whose router died stops when its stdin ends.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
