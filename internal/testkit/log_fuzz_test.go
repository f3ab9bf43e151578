package testkit

import (
	"fmt"
	"testing"
)

// FuzzWriterDuringTheTarget: a writer made for a fuzz test takes writes
// while the fuzz target runs, as a server started for the target logs
// whenever it likes, without the panic f.Log raises there.
func FuzzWriterDuringTheTarget(f *testing.F) {
	w := Writer(f)
	f.Add("a line")
	f.Add("another\n")
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := fmt.Fprint(w, s); n != len(s) || err != nil {
			t.Fatalf("wrote %d of %d bytes: %v", n, len(s), err)
		}
	})
}
