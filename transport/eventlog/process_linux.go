package eventlog

import (
	"os/exec"
	"syscall"
)

// detach puts the server process in its own process group, so a terminal's
// Ctrl-C reaches the router alone (which closes the log, then the
// process), and has the kernel kill it when the router dies. The kernel
// sends that signal when the thread that started the process ends; the
// router locks no goroutine to a thread, so its threads live as long as
// it does.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
