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
	deadline := time.Now().Add(4 * time.Second) // yes stops by itself at 5 s
	tree := procTree(root)
	for len(tree) < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // timeout forks yes after it starts
		tree = procTree(root)
	}
	if len(tree) < 3 || tree[0] != root || !slices.Contains(tree, child) {
		t.Fatalf("procTree(%d) = %v, want %d, its child %d and a grandchild", root, tree, root, child)
	}
	own0, cpu0 := pidCPU(root), p.cpu()
	_, w0 := p.syscalls()
	var grew, writes float64
	for time.Now().Before(deadline) {
		_, w1 := p.syscalls()
		grew, writes = p.cpu()-cpu0, w1-w0
		if grew >= 0.05 && writes > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if grew < 0.05 || !(writes > 0) {
		t.Fatalf("while yes ran, the tree's cpu grew %.2f s and its writes %v, want >= 0.05 s and > 0", grew, writes)
	}
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
