package testkit

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// Writer sends each write to t.Log, without its trailing newline, until
// the test ends. Later writes, from goroutines that outlive the test (a
// server logging its shutdown), are dropped: t.Log panics after the end.
// For a fuzz test (t a *testing.F) the writes are kept instead and logged
// when it ends, if it failed: f.Log panics while the fuzz target runs,
// and a server started for the target logs whenever it likes.
func Writer(t testing.TB) io.Writer {
	w := &testWriter{t: t}
	if _, fuzz := t.(*testing.F); fuzz {
		w.kept = &Buffer{}
	}
	t.Cleanup(func() {
		w.done.Store(true)
		if w.kept != nil && t.Failed() {
			t.Log(w.kept.String())
		}
	})
	return w
}

type testWriter struct {
	t    testing.TB
	kept *Buffer // a fuzz test's lines, logged at its end
	done atomic.Bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	switch {
	case w.done.Load():
	case w.kept != nil:
		_, _ = w.kept.Write(p)
	default:
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// Logger is a logger at level that writes to the test's log (Writer).
func Logger(t testing.TB, level hclog.Level) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Output: Writer(t), Level: level})
}

// Buffer collects what loggers and other goroutines write, for a test to
// read while they go on. The zero value is ready.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Reset drops everything written so far.
func (s *Buffer) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Reset()
}

// Lines returns the lines written so far that contain sub, without their
// newlines.
func (s *Buffer) Lines(sub string) []string {
	var out []string
	for l := range strings.Lines(s.String()) {
		if l = strings.TrimSuffix(l, "\n"); strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return out
}
