package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// idleHandling says how this machine's idle CPUs wait, as its kernel
// reports under root (the filesystem root, "/"): the cpuidle driver and
// governor, and on a virtual machine's guest with the haltpoll driver how
// long an idle vCPU polls before it halts (a host may build the haltpoll
// module in too; its parameters mean something only with that driver). A
// first byte at a moderate rate depends on it (a halted vCPU is slow to
// wake), so a run's figures compare only between machines that wait alike.
func idleHandling(root string) string {
	cpuidle := filepath.Join(root, "sys", "devices", "system", "cpu", "cpuidle")
	driver := readTrim(filepath.Join(cpuidle, "current_driver"))
	if driver == "" {
		return "idle CPUs: the kernel does not say how they wait (no cpuidle driver)"
	}
	governor := readTrim(filepath.Join(cpuidle, "current_governor"))
	if governor == "" {
		governor = readTrim(filepath.Join(cpuidle, "current_governor_ro"))
	}
	says := "idle CPUs: cpuidle driver " + driver
	if governor != "" {
		says += ", governor " + governor
	}
	if driver != "haltpoll" {
		return says // a host's idle states: no guest halt polling to report
	}
	params := filepath.Join(root, "sys", "module", "haltpoll", "parameters")
	ns, err := strconv.ParseInt(readTrim(filepath.Join(params, "guest_halt_poll_ns")), 10, 64)
	switch {
	case err != nil:
		// the driver without its parameters: nothing more to say
	case ns == 0:
		says += "; an idle vCPU halts at once (guest_halt_poll_ns=0)"
	case readTrim(filepath.Join(params, "guest_halt_poll_allow_shrink")) == "Y":
		says += fmt.Sprintf("; an idle vCPU polls before it halts, adaptively: up to %d µs, shrinking after longer idles", ns/1000)
	default:
		says += fmt.Sprintf("; an idle vCPU polls up to %d µs before it halts", ns/1000)
	}
	return says
}

// readTrim is a file's content without surrounding space, "" when it
// cannot be read.
func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
