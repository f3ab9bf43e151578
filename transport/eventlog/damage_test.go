package eventlog

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airouter/airouter/internal/testkit"
	"github.com/nats-io/nats.go/jetstream"
)

// truncateBlock cuts the events stream's first block in storeDir to half.
func truncateBlock(t *testing.T, storeDir string) {
	t.Helper()
	p := filepath.Join(eventsMsgsDir(storeDir), "1.blk")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, fi.Size()/2+7); err != nil {
		t.Fatal(err)
	}
}

// publishBans stores n bans through PublishControl.
func publishBans(t *testing.T, l *Log, n int) {
	t.Helper()
	for i := range n {
		if _, err := l.PublishControl(testkit.Context(t), banEvent(fmt.Sprintf("b%d", i), fmt.Sprintf("cred-%02d", i), "m")); err != nil {
			t.Fatal(err)
		}
	}
}

// The store's mark survives a crash beside the stream: after the events
// stream's block is truncated in a copy taken while the log ran, Damage
// reports the lost tail against it, and a Reader on the copy refuses with
// the loss named. An undamaged store reports nothing.
func TestDamageAfterACrashIsFoundByTheMark(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, Options{StoreDir: dir})
	publishBans(t, l, 40)
	if d, err := l.Damage(testkit.Context(t)); err != nil || d.Missing != 0 || d.LastStored != 40 {
		t.Fatalf("intact log: damage %+v, %v", d, err)
	}
	if n, err := l.conn.syncEvents(); err != nil || n == 0 {
		t.Fatalf("syncEvents synced %d block files (%v), want the newest", n, err)
	}
	crashed := t.TempDir()
	testkit.CopyDir(t, dir, crashed)
	truncateBlock(t, crashed)

	_, err := OpenReader(testkit.Context(t), ReaderOptions{StoreDir: crashed, TempDir: t.TempDir(), Logger: testkit.Logger(t, 0)})
	if err == nil || !strings.Contains(err.Error(), "lost") || !strings.Contains(err.Error(), "from sequence") {
		t.Fatalf("OpenReader on a damaged copy: %v, want the loss named", err)
	}
	l2 := openTest(t, Options{StoreDir: crashed})
	d, err := l2.Damage(testkit.Context(t))
	if err != nil || d.Missing == 0 || d.FromSeq != d.LastStored+1 || d.LastStored+d.Missing != 40 {
		t.Fatalf("damage %+v, %v: want the tail after the last stored event missing, up to 40", d, err)
	}
}

// Without a mark (memory storage, an external cluster) nothing is synced
// and the checks still run on the stream's state.
func TestNoMarkWithoutAFileStore(t *testing.T) {
	l := openTest(t, Options{StoreDir: t.TempDir(), Storage: StorageMemory})
	publishBans(t, l, 3)
	if n, err := l.conn.syncEvents(); err != nil || n != 0 {
		t.Fatalf("memory storage synced %d files (%v)", n, err)
	}
	if d, err := l.Damage(context.Background()); err != nil || d.Missing != 0 {
		t.Fatalf("damage %+v, %v", d, err)
	}
}

// damageOf counts interior gaps, lost messages and a tail below what was
// acknowledged, each once, from the first missing sequence.
func TestDamageOfAStreamState(t *testing.T) {
	for _, c := range []struct {
		name                 string
		st                   jetstream.StreamState
		expect               uint64
		missing, from, store uint64
	}{
		{"intact", jetstream.StreamState{Msgs: 10, FirstSeq: 1, LastSeq: 10}, 10, 0, 0, 10},
		{"new", jetstream.StreamState{Deleted: []uint64{0}, NumDeleted: 1}, 0, 0, 0, 0},
		{"aged out", jetstream.StreamState{Msgs: 0, FirstSeq: 11, LastSeq: 10}, 10, 0, 0, 0},
		{"tail below the mark", jetstream.StreamState{Msgs: 6, FirstSeq: 1, LastSeq: 6}, 10, 4, 7, 6},
		{"gap at the end", jetstream.StreamState{Msgs: 5, FirstSeq: 1, LastSeq: 8, Deleted: []uint64{6, 7, 8}}, 8, 3, 6, 5},
		{"lost and deleted", jetstream.StreamState{Msgs: 7, FirstSeq: 1, LastSeq: 10, Deleted: []uint64{4, 5},
			Lost: &jetstream.LostStreamData{Msgs: []uint64{5, 9}}}, 12, 5, 4, 10},
	} {
		d := damageOf(c.st, c.expect)
		if d.Missing != c.missing || d.FromSeq != c.from || d.LastStored != c.store {
			t.Errorf("%s: %+v, want missing %d from %d, last stored %d", c.name, d, c.missing, c.from, c.store)
		}
	}
}
