package testkit

import (
	"context"
	"testing"
	"time"
)

// Wait bounds Eventually and Receive: what a test waits for crosses goroutines, a
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

// Receive returns the next value from ch, failing the test when none
// comes within Wait: for a value another goroutine sends (a publish, a
// saved checkpoint, a signal), never for letting time pass. A closed
// channel gives its zero value at once, as a receive does.
func Receive[T any](t testing.TB, what string, ch <-chan T) T {
	t.Helper()
	return receiveWithin(t, Wait, what, ch)
}

func receiveWithin[T any](t testing.TB, d time.Duration, what string, ch <-chan T) T {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("timed out after %s waiting for %s", d, what)
		var zero T
		return zero
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
