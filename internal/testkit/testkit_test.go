package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
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

func TestReceiveReturnsTheValueSent(t *testing.T) {
	ch := make(chan int)
	go func() { ch <- 7 }()
	if got := Receive(t, "seven", ch); got != 7 {
		t.Fatalf("Receive = %d, want 7", got)
	}
}

// fatalRecorder is a test that records its failure and stops the calling
// goroutine, as t.Fatalf does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestReceiveFailsTheTestWhenNothingComes(t *testing.T) {
	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		receiveWithin(rec, time.Millisecond, "a publish", make(chan int))
		rec.msg = "returned without failing"
	}()
	<-done
	if !strings.Contains(rec.msg, "timed out after 1ms waiting for a publish") {
		t.Fatalf("failure = %q", rec.msg)
	}
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
