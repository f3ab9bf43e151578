package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/internal/testkit"
)

// newestBlock is the path of the events stream's newest block file in store.
func newestBlock(t *testing.T, store string) string {
	t.Helper()
	blks, err := filepath.Glob(filepath.Join(store, "jetstream", "*", "streams", "AIROUTER_EVENTS", "msgs", "*.blk"))
	if err != nil || len(blks) == 0 {
		t.Fatalf("no events block in %s: %v", store, err)
	}
	index := func(p string) int {
		n, _ := strconv.Atoi(strings.TrimSuffix(filepath.Base(p), ".blk"))
		return n
	}
	return slices.MaxFunc(blks, func(a, b string) int { return index(a) - index(b) })
}

// garbleNewestBlock overwrites the length of the middle record in the
// events stream's newest block file in store with garbage: the server
// drops the records from there on and rebuilds the stream to a lower last
// sequence.
func garbleNewestBlock(t *testing.T, store string) {
	t.Helper()
	path := newestBlock(t, store)
	b, starts := testkit.BlockRecords(t, path)
	if len(starts) < 4 {
		t.Fatalf("%s holds %d records", path, len(starts))
	}
	copy(b[starts[len(starts)/2]:], []byte{0xA5, 0xA5, 0xA5, 0xA5})
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// After a clean stop the checkpoint holds every ban; garbage in the newest
// block makes the server rebuild the stream to a lower last sequence. The
// router reports the loss, keeps the checkpoint's whole state (not only
// the bans of the events that survived), says so, and moves the stream
// past the checkpoint: a new event gets the next sequence after it and is
// folded, and the next start finds no damage and the same state.
func TestGarbageAfterACleanStopKeepsTheCheckpoint(t *testing.T) {
	store := tempStore(t)
	r, ups := bannedRouter(t, store)
	r.stop()
	garbleNewestBlock(t, store)

	var logs testkit.Buffer
	r2 := startLogged(t, store, ups, &logs)
	lh := lossReported(t, r2, &logs)
	if kept := len(r2.live.Load().Bans(time.Now())); kept != damageBans {
		t.Fatalf("kept %d bans (%d reported missing from seq %d), want the checkpoint's %d",
			kept, lh.MissingEvents, lh.MissingFromSeq, damageBans)
	}
	kept := logs.Lines("kept the checkpoint")
	if len(kept) != 1 || !strings.Contains(kept[0], "[ERROR]") {
		t.Fatalf("no ERROR line says what the checkpoint kept and what was lost: %q", kept)
	}
	ckpt, lost, removed, next := logNumber(t, kept[0], "checkpoint_seq"), logNumber(t, kept[0], "lost_after_checkpoint"),
		logNumber(t, kept[0], "removed_events"), logNumber(t, kept[0], "next_seq")
	if lh.MissingFromSeq > ckpt || removed == 0 || removed >= lh.MissingFromSeq || next != ckpt+lost+1 || ckpt < damageBans {
		t.Fatalf("checkpoint_seq=%d lost_after_checkpoint=%d removed_events=%d next_seq=%d with the loss from %d: "+
			"want the checkpoint past the loss, the surviving events removed and the stream continuing after both",
			ckpt, lost, removed, next, lh.MissingFromSeq)
	}

	// A new event takes a sequence at or past next_seq and is folded.
	status, _, body := r2.do(t, "POST", "/api/unban", testMasterKey, map[string]string{"credential": "cred-a", "model": "gpt-test"})
	if status != 200 {
		t.Fatalf("unban: %d %s", status, body)
	}
	if blocked(r2, "cred-a", "gpt-test") || r2.live.Load().Seq() < next {
		t.Fatalf("the unban after the move: blocked %v at seq %d, want folded at %d or later", blocked(r2, "cred-a", "gpt-test"), r2.live.Load().Seq(), next)
	}

	// The moved stream is no damage any more: the next start reports no
	// loss and keeps every ban but the lifted one.
	r2.stop()
	var logs3 testkit.Buffer
	r3 := startLogged(t, store, ups, &logs3)
	if lines := logs3.Lines("lost"); len(lines) > 0 {
		t.Errorf("the start after the move reports a loss: %q", lines)
	}
	if kept := len(r3.live.Load().Bans(time.Now())); kept != damageBans-1 || blocked(r3, "cred-a", "gpt-test") {
		t.Fatalf("after another restart: %d bans, cred-a blocked %v; want %d, not blocked", kept, blocked(r3, "cred-a", "gpt-test"), damageBans-1)
	}
}

// logNumber is the number after key= in an hclog line.
func logNumber(t *testing.T, line, key string) uint64 {
	t.Helper()
	m := regexp.MustCompile(`\b` + key + `=(\d+)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no %s in %q", key, line)
	}
	n, err := strconv.ParseUint(m[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
