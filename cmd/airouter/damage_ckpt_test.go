package main

import (
	"fmt"
	"os"
	"path/filepath"
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

// garbleNewestBlock overwrites 16 bytes in the middle of the events
// stream's newest block file in store: the server drops the records from
// there on and rebuilds the stream to a lower last sequence.
func garbleNewestBlock(t *testing.T, store string) {
	t.Helper()
	path := newestBlock(t, store)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(b) / 2; i < len(b)/2+16; i++ {
		b[i] = 0xA5
	}
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
	snap := r2.live.Load()
	if kept := len(snap.Bans(time.Now())); kept != damageBans {
		t.Fatalf("kept %d bans (%d reported missing from seq %d), want the checkpoint's %d",
			kept, lh.MissingEvents, lh.MissingFromSeq, damageBans)
	}
	ckpt := snap.Seq()
	if lh.MissingFromSeq > ckpt {
		t.Fatalf("the loss starts at %d, after the checkpoint's %d: the block was not damaged", lh.MissingFromSeq, ckpt)
	}
	kept := logs.Lines("kept the checkpoint")
	if len(kept) != 1 || !strings.Contains(kept[0], "[ERROR]") ||
		!strings.Contains(kept[0], fmt.Sprintf("checkpoint_seq=%d", ckpt)) ||
		!strings.Contains(kept[0], fmt.Sprintf("removed_events=%d", lh.MissingFromSeq-1)) ||
		!strings.Contains(kept[0], fmt.Sprintf("next_seq=%d", ckpt+1)) {
		t.Errorf("no ERROR line says what the checkpoint kept and what was lost: %q", kept)
	}

	// A new event takes a sequence above the checkpoint's and is folded.
	status, _, body := r2.do(t, "POST", "/api/unban", testMasterKey, map[string]string{"credential": "cred-a", "model": "gpt-test"})
	if status != 200 {
		t.Fatalf("unban: %d %s", status, body)
	}
	if blocked(r2, "cred-a", "gpt-test") || r2.live.Load().Seq() != ckpt+1 {
		t.Fatalf("the unban after the move: blocked %v at seq %d, want folded at %d", blocked(r2, "cred-a", "gpt-test"), r2.live.Load().Seq(), ckpt+1)
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
