package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The figures of a role cover its process tree, not only its pid: airouter
// runs its embedded NATS server in a child process, whose CPU, system calls
// and memory are the router's cost too.
//
// The tree is the live one at each reading. A descendant that exits and is
// reaped inside the tree still counts: its CPU moves to its parent's
// cutime+cstime, which cpu adds, and its read and write counters to its
// parent's /proc/<pid>/io, which includes reaped children already. What a
// reading can miss is a descendant caught between two reads of one walk
// (reaped after its parent was read) or reparented out of the tree; the
// children the benchmark measures live as long as their parent, so neither
// happens during a run.

// procTree is pid and its live descendants, pid first, each process before
// its children: the children of every thread (/proc/<pid>/task/*/children),
// recursively. A process that ends during the walk is left out with its
// descendants.
func procTree(pid int) []int {
	tree := []int{pid}
	seen := map[int]bool{pid: true}
	for i := 0; i < len(tree); i++ {
		files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", tree[i]))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			for _, s := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(s); err == nil && !seen[c] {
					seen[c] = true
					tree = append(tree, c)
				}
			}
		}
	}
	return tree
}

// pidCPU is one process's CPU seconds, its own and its reaped children's:
// its own from the kernel's CPU clock of the process (clock_gettime on its
// CPUCLOCK_SCHED clock: every thread's time on a processor, in ns, the
// threads that have ended included), its children's from cutime and
// cstime of /proc/<pid>/stat, in ticks of 10 ms. The stat file's own
// utime and stime come in those ticks too, 2 % of the half second a proxy
// spends on a round, which is more than some differences the rounds
// compare. 0 once it has ended.
func pidCPU(pid int) float64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(processCPUClock(pid), &ts); err != nil {
		return 0
	}
	own := float64(ts.Nano()) / 1e9
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	if len(f) < 15 {
		return 0
	}
	var ticks float64
	for _, s := range f[13:15] {
		v, _ := strconv.ParseFloat(s, 64)
		ticks += v
	}
	return own + ticks/100
}

// processCPUClock is the id of pid's CPU-time clock, as the kernel makes
// it (MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)).
func processCPUClock(pid int) int32 { return ^int32(pid)<<3 | 2 }

// pidSyscalls is one process's read-family and write-family system calls,
// its reaped children's included (syscr and syscw of /proc/<pid>/io); ok
// is false where the counters cannot be read.
func pidSyscalls(pid int) (reads, writes float64, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, found := strings.CutPrefix(line, "syscr: "); found {
			reads, _ = strconv.ParseFloat(v, 64)
		}
		if v, found := strings.CutPrefix(line, "syscw: "); found {
			writes, _ = strconv.ParseFloat(v, 64)
		}
	}
	return reads, writes, true
}

// pidPeakRSS is one process's VmHWM in MB; 0 once it has ended.
func pidPeakRSS(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// treeCPU is the CPU seconds of pid's tree (pidCPU summed over procTree).
func treeCPU(pid int) float64 {
	var sum float64
	for _, p := range procTree(pid) {
		sum += pidCPU(p)
	}
	return sum
}

// treeSyscalls is the read and write system calls of pid's tree
// (pidSyscalls summed over procTree). NaN where pid's own counters cannot
// be read; a descendant that ends during the walk adds nothing.
func treeSyscalls(pid int) (reads, writes float64) {
	for i, p := range procTree(pid) {
		r, w, ok := pidSyscalls(p)
		if !ok && i == 0 {
			return math.NaN(), math.NaN()
		}
		reads, writes = reads+r, writes+w
	}
	return reads, writes
}

// treePeakRSS is the sum of the VmHWM of pid's tree in MB: an upper bound
// of the tree's peak, since each process's peak may come at a different
// moment (their simultaneous peak is not recorded anywhere).
func treePeakRSS(pid int) float64 {
	var sum float64
	for _, p := range procTree(pid) {
		sum += pidPeakRSS(p)
	}
	return sum
}
