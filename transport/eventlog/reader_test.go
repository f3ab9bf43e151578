package eventlog

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

// A reader opens a copy of a store that a running log holds: it sees the
// events, the bounds and the checkpoints, and the running log goes on
// unaffected, its directory unchanged by the reader.
func TestReaderReadsACopyOfAStoreInUse(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, Options{StoreDir: dir})
	ctx := testkit.Context(t)
	const n = 50
	for i := range n {
		if !l.Publish(outcomeEvent(i)) {
			t.Fatalf("Publish %d refused", i)
		}
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.SaveCheckpoint(ctx, 20, []byte(`{"at":20}`)); err != nil {
		t.Fatal(err)
	}
	if err := l.SaveCheckpoint(ctx, 40, []byte(`{"at":40}`)); err != nil {
		t.Fatal(err)
	}

	tmp := t.TempDir()
	r, err := OpenReader(ctx, ReaderOptions{StoreDir: dir, TempDir: tmp, Logger: testkit.Logger(t, hclog.Warn)})
	if err != nil {
		t.Fatalf("OpenReader: %v", err)
	}
	var got []domain.Event
	if err := r.Read(ctx, 0, 0, func(ev domain.Event, _ uint64) error {
		got = append(got, ev)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	checkLogOrder(t, got, n)
	b, err := r.Bounds(ctx)
	if err != nil || b.FirstSeq != 1 || b.LastSeq != got[n-1].Seq || b.FirstStored.IsZero() {
		t.Fatalf("bounds = %+v, %v", b, err)
	}
	cps, err := r.Checkpoints(ctx)
	if err != nil || len(cps) != 2 || cps[0].Seq != 20 || cps[1].Seq != 40 || string(cps[1].Data) != `{"at":40}` || cps[1].Stored.IsZero() {
		t.Fatalf("checkpoints = %+v, %v", cps, err)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("the copy was not removed: %v", left)
	}

	// The running log goes on.
	if !l.Publish(outcomeEvent(n)) {
		t.Fatal("the running log refused an event after the reader closed")
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if last, err := l.LastSeq(ctx); err != nil || last != got[n-1].Seq+1 {
		t.Fatalf("last seq = %d, %v", last, err)
	}
}

// A reader changes nothing in the store it reads.
func TestReaderLeavesTheStoreAsItWas(t *testing.T) {
	dir := t.TempDir()
	ctx := testkit.Context(t)
	l, err := Open(ctx, Options{StoreDir: dir, Logger: testkit.Logger(t, hclog.Warn)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		l.Publish(outcomeEvent(i))
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	before := treeDigest(t, dir)
	r, err := OpenReader(ctx, ReaderOptions{StoreDir: dir, TempDir: t.TempDir(), Logger: testkit.Logger(t, hclog.Warn)})
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	if err := r.Read(ctx, 0, 0, func(domain.Event, uint64) error { count++; return nil }); err != nil || count != 10 {
		t.Fatalf("read %d events, %v", count, err)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if after := treeDigest(t, dir); after != before {
		t.Fatalf("the store changed:\nbefore\n%s\nafter\n%s", before, after)
	}
}

// A reader connects to a running log's listener, and SeqAt finds the first
// event stored at or after a moment.
func TestReaderOverNATSAndSeqAt(t *testing.T) {
	l := openTest(t, Options{StoreDir: t.TempDir(), Listen: "127.0.0.1:0"})
	ctx := testkit.Context(t)
	if !l.Publish(outcomeEvent(0)) {
		t.Fatal("Publish refused")
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	mid := time.Now()
	for i := 1; i < 4; i++ {
		if !l.Publish(outcomeEvent(i)) {
			t.Fatal("Publish refused")
		}
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReader(ctx, ReaderOptions{NatsURL: l.ClientURL(), Logger: testkit.Logger(t, hclog.Warn)})
	if err != nil {
		t.Fatalf("OpenReader: %v", err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	for _, tc := range []struct {
		at   time.Time
		want uint64
	}{
		{time.Time{}, 1},
		{mid, 2},
		{time.Now().Add(time.Hour), 5},
	} {
		if got, err := r.SeqAt(ctx, tc.at); err != nil || got != tc.want {
			t.Errorf("SeqAt(%v) = %d, %v; want %d", tc.at, got, err, tc.want)
		}
	}
	if cps, err := r.Checkpoints(ctx); err != nil || len(cps) != 0 {
		t.Errorf("checkpoints = %v, %v; want none", cps, err)
	}
}

func TestOpenReaderRefusesWhatIsNotALog(t *testing.T) {
	ctx := testkit.Context(t)
	for name, o := range map[string]ReaderOptions{
		"nothing":         {},
		"both":            {StoreDir: t.TempDir(), NatsURL: "nats://127.0.0.1:1"},
		"empty directory": {StoreDir: t.TempDir()},
	} {
		t.Run(name, func(t *testing.T) {
			r, err := OpenReader(ctx, o)
			if err == nil {
				_ = r.Close(ctx)
				t.Fatal("OpenReader accepted it")
			}
		})
	}
	// A server with JetStream but no airouter stream.
	other := openTest(t, Options{StoreDir: t.TempDir(), Listen: "127.0.0.1:0"})
	if err := other.conn.cur().js.DeleteStream(ctx, EventsStream); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReader(ctx, ReaderOptions{NatsURL: other.ClientURL()})
	if err == nil {
		_ = r.Close(ctx)
		t.Fatal("OpenReader accepted a server without the events stream")
	}
	if !strings.Contains(err.Error(), EventsStream) {
		t.Fatalf("error = %v, want it to name the stream", err)
	}
}

// treeDigest is every file under dir with a hash of its content.
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %x\n", path, sha256.Sum256(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
