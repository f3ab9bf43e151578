package testkit

import (
	"encoding/binary"
	"os"
	"testing"
)

// BlockRecords reads a block file of a JetStream file store, for tests
// that damage a store on purpose, and returns its bytes and where each of
// its records starts. A record is a little-endian uint32 length, its top
// bit flagging headers, then the sequence, time, subject, headers, data
// and hash; a block it cannot walk so fails the test.
func BlockRecords(t testing.TB, path string) ([]byte, []int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var starts []int
	for i := 0; i+4 <= len(b); {
		rl := int(binary.LittleEndian.Uint32(b[i:]) &^ (1 << 31))
		if rl < 22 || i+rl > len(b) {
			t.Fatalf("%s: no record at offset %d", path, i)
		}
		starts = append(starts, i)
		i += rl
	}
	return b, starts
}
