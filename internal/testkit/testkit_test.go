package testkit

import (
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
)

func TestBufferLines(t *testing.T) {
	var b Buffer
	b.Write([]byte("a one\nb two\n"))
	b.Write([]byte("a three"))
	if got := b.Lines("a "); !slices.Equal(got, []string{"a one", "a three"}) {
		t.Errorf("Lines = %q", got)
	}
	b.Reset()
	if b.String() != "" || b.Lines("") != nil {
		t.Errorf("after Reset: %q", b.String())
	}
}

func TestEventuallyWaitsForTheCondition(t *testing.T) {
	var n atomic.Int32
	go func() {
		for range 3 {
			n.Add(1)
		}
	}()
	Eventually(t, "three", func() bool { return n.Load() == 3 })
}

func TestCopyDir(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "copy")
	if err := os.MkdirAll(filepath.Join(src, "a", "b"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "a", "b", "f"), []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	CopyDir(t, src, dst)
	if b, err := os.ReadFile(filepath.Join(dst, "a", "b", "f")); err != nil || string(b) != "data" {
		t.Fatalf("copied file: %q, %v", b, err)
	}
}
