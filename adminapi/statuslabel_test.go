package adminapi

import (
	"strconv"
	"testing"
	"time"
)

// Every status, in the table's range and out of it, is labelled by its
// decimal digits.
func TestStatusLabel(t *testing.T) {
	d := newStatusDigits()
	for _, code := range []int{0, 1, 99, 100, 101, 200, 408, 429, 502, 599, 600, 1000, -1} {
		if got, want := d.label(code), strconv.Itoa(code); got != want {
			t.Errorf("label(%d) = %q, want %q", code, got, want)
		}
	}
	for code := 100; code < 600; code++ {
		if got := d.label(code); got != strconv.Itoa(code) {
			t.Fatalf("label(%d) = %q", code, got)
		}
	}
}

// Counting an attempt on a series that exists allocates nothing: the
// status label is not formatted per attempt.
func TestAttemptOnAKnownSeriesAllocatesNothing(t *testing.T) {
	m := newRig(t).api.Metrics()
	m.Attempt("openai-1", "gpt-4o", "/v1/chat/completions", 200, 300*time.Millisecond)
	if n := testing.AllocsPerRun(100, func() {
		m.Attempt("openai-1", "gpt-4o", "/v1/chat/completions", 200, 300*time.Millisecond)
	}); n != 0 {
		t.Errorf("an attempt on a known series makes %v allocations, want 0", n)
	}
}
