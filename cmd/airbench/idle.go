package main

import (
	"os"
	"path/filepath"
	"strings"
)

// idleHandling says how this machine's idle CPUs wait, as its kernel
// reports under root (the filesystem root, "/"): the cpuidle driver and
// governor, and on a virtual machine's guest with the haltpoll driver how
// long an idle vCPU polls before it halts. A first byte at a moderate rate
// depends on it (a halted vCPU is slow to wake), so a run's figures are
// comparable only between machines that wait alike.
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
	params := filepath.Join(root, "sys", "module", "haltpoll", "parameters")
	switch ns := readTrim(filepath.Join(params, "guest_halt_poll_ns")); {
	case ns == "":
	case ns == "0":
		says += "; an idle vCPU halts at once (guest_halt_poll_ns=0)"
	case readTrim(filepath.Join(params, "guest_halt_poll_allow_shrink")) == "Y":
		says += "; an idle vCPU polls up to " + ns + " ns before it halts, less after wake-ups that come later"
	default:
		says += "; an idle vCPU polls " + ns + " ns before it halts"
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
