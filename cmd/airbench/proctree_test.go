package main

import (
	"bufio"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airouter/airouter/internal/testkit"
)

// A role's figures cover its descendants: with sh waiting on `timeout 5
// yes` (sh → timeout → yes), the walk from sh finds timeout, sh's child,
// and yes below it, and sh's cpu and write system calls grow while only
// yes runs, far more than sh's own CPU.
func TestProcTreeCountsDescendants(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	for _, bin := range []string{"sh", "timeout", "yes"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skip(bin, " not found")
		}
	}
	p := startTree(t)
	root := p.pid()
	child := readChildPID(t, p)
	// yes stops by itself at 5 s: every wait ends before.
	var tree []int
	testkit.EventuallyWithin(t, 4*time.Second, "timeout to fork yes", func() bool {
		tree = procTree(root)
		return len(tree) >= 3
	})
	if tree[0] != root || !slices.Contains(tree, child) {
		t.Fatalf("procTree(%d) = %v, want %d, its child %d and a grandchild", root, tree, root, child)
	}
	own0, cpu0 := pidCPU(root), p.cpu()
	_, w0 := p.syscalls()
	var grew float64
	testkit.EventuallyWithin(t, 4*time.Second, "the tree's cpu to grow 0.05 s and its writes with yes running", func() bool {
		_, w1 := p.syscalls()
		grew = p.cpu() - cpu0
		return grew >= 0.05 && w1-w0 > 0
	})
	if own := pidCPU(root) - own0; own >= grew/2 {
		t.Fatalf("sh's own CPU grew %.2f s of the tree's %.2f s: the growth should be its descendants'", own, grew)
	}
}

// startTree starts sh with `timeout 5 yes` in the background, printing the
// background job's pid; cleanup kills the tree by pid, deepest first
// (killing timeout alone would leave yes running), then waits for sh.
func startTree(t *testing.T) *proc {
	p := &proc{name: "sh", cmd: exec.Command("sh", "-c", "timeout 5 yes > /dev/null & echo $!; wait")}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.out = bufio.NewReader(out)
	t.Cleanup(func() {
		tree := procTree(p.pid())
		for i := len(tree) - 1; i >= 0; i-- {
			_ = syscall.Kill(tree[i], syscall.SIGKILL)
		}
		_ = p.cmd.Wait()
	})
	return p
}

// readChildPID is the pid sh printed for its background job.
func readChildPID(t *testing.T, p *proc) int {
	line, err := p.out.ReadString('\n')
	if err != nil {
		t.Fatalf("sh printed %q: %v", line, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("sh printed %q: %v", line, err)
	}
	return pid
}

// A process's CPU comes from its kernel CPU clock in ns: it lies within
// two ticks of 10 ms of the user and system ticks of /proc/<pid>/stat
// read before and after it, reads between ticks, and is 0 once the
// process is gone.
func TestPidCPUReadsTheProcessClock(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	// A shell counting on its own processor, to an end it reaches by itself
	// in a few seconds.
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 3000000 ]; do i=$((i+1)); done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid
	between := false
	testkit.EventuallyWithin(t, 4*time.Second, "the shell to run 0.2 s on a processor, read between ticks", func() bool {
		// The stat ticks read on both sides of the clock bound it, so a
		// pause between the reads widens the bounds instead of failing.
		before := statTicks(t, pid)
		clock := pidCPU(pid)
		after := statTicks(t, pid)
		if clock < before/100-0.02 || clock > after/100+0.02 {
			t.Fatalf("pidCPU %.4f s against %v and %v ticks of /proc/%d/stat", clock, before, after, pid)
		}
		between = between || math.Abs(clock*100-math.Round(clock*100)) > 1e-6
		return clock >= 0.2 && between
	})
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if got := pidCPU(pid); got != 0 {
		t.Fatalf("pidCPU of the ended process = %v, want 0", got)
	}
}

// statTicks is utime+stime of /proc/<pid>/stat.
func statTicks(t *testing.T, pid int) float64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	u, _ := strconv.ParseFloat(f[11], 64)
	s, _ := strconv.ParseFloat(f[12], 64)
	return u + s
}
