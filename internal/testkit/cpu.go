package testkit

import (
	"syscall"
	"time"
)

// ProcessCPU is the CPU time this process has used, user and system, for
// benchmarks that compare what a piece of work costs the whole process
// (its background goroutines included) rather than what one goroutine
// spends. It is 0 if the kernel cannot say.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
