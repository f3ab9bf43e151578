package proxy

import (
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// rssMark returns the resident set (VmRSS, MB) once the heap's garbage
// is collected and its free pages returned, and resets the process's
// peak (VmHWM) to it (Linux's /proc/self/clear_refs), so that rssPeak
// then tells the highest resident set since. ok is false where either
// cannot be read or reset.
func rssMark() (mb float64, ok bool) {
	runtime.GC()
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return 0, false
	}
	return procStatusMB("VmRSS:")
}

// rssPeak is VmHWM in MB: the highest resident set since the last
// rssMark.
func rssPeak() (float64, bool) { return procStatusMB("VmHWM:") }

// rssNow is VmRSS in MB once the heap's garbage is collected and its free
// pages returned: what stays resident.
func rssNow() (float64, bool) {
	runtime.GC()
	debug.FreeOSMemory()
	return procStatusMB("VmRSS:")
}

func procStatusMB(field string) (float64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024, err == nil
		}
	}
	return 0, false
}
