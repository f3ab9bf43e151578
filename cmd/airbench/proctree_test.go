package main

import (
	"bufio"
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
