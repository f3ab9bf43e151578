package testkit

import (
	"context"
	"testing"
	"time"
)

// Wait bounds Eventually: what a test waits for crosses goroutines, a
// connection or the log, and holds well within it even on a loaded
// machine.
const Wait = 20 * time.Second

// Eventually polls cond until it holds and fails the test when it still
// does not after Wait. It is for conditions that cross goroutines and the
// log, never for letting time pass.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	EventuallyWithin(t, Wait, what, cond)
}

// EventuallyWithin is Eventually with its own bound, for waits that take
// longer than Wait by design (a cluster electing leaders, a benchmark's
// million events).
func EventuallyWithin(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Context is a context for a test's calls, so that a bug fails the test
// instead of hanging it: it ends after a minute, or when the test's
// cleanups run (after the ones registered later, which may still use it).
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}
