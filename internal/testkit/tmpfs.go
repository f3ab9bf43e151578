package testkit

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// SmallFS mounts a tmpfs of size bytes on a fresh directory and unmounts
// it when the test ends (after the test's later cleanups, such as closing
// a log on it). It skips the test unless it runs as root on Linux with a
// mount command.
func SmallFS(t testing.TB, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root; run as root to test a full store")
	}
	if _, err := exec.LookPath("mount"); err != nil {
		t.Skip("no mount command to mount a small tmpfs: ", err)
	}
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+strconv.Itoa(size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("cannot mount a tmpfs (%v): %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// FillFS writes a file in dir until its filesystem is full and returns a
// function that removes it again.
func FillFS(t testing.TB, dir string) (free func()) {
	t.Helper()
	path := filepath.Join(dir, "fill")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{64 << 10, 4 << 10, 1} { // down to the last byte
		chunk := make([]byte, n)
		for err == nil {
			_, err = f.Write(chunk)
		}
		if !errors.Is(err, syscall.ENOSPC) {
			break
		}
		err = nil
	}
	_ = f.Close()
	if err != nil {
		t.Fatalf("fill %s: %v, want ENOSPC", dir, err)
	}
	return func() {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
}
