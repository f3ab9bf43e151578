package eventlog

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/internal/testkit"
)

// restoreHelperEnv makes the test binary open the store in the named dir
// with a 2 s deadline and print how it went (TestRestoreHelperProcess):
// a restore that never ends keeps a goroutine busy for good, so it runs in
// a process of its own.
// With restoreReaderEnv set too, it opens a Reader on the store instead.
const (
	restoreHelperEnv = "EVENTLOG_RESTORE_DIR"
	restoreReaderEnv = "EVENTLOG_RESTORE_READER"
)

func TestRestoreHelperProcess(t *testing.T) {
	dir := os.Getenv(restoreHelperEnv)
	if dir == "" {
		t.Skip("only runs as a subprocess of another test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var closer interface{ Close(context.Context) error }
	var err error
	if os.Getenv(restoreReaderEnv) != "" {
		closer, err = OpenReader(ctx, ReaderOptions{StoreDir: dir})
	} else {
		closer, err = Open(ctx, Options{StoreDir: dir})
	}
	if err != nil {
		fmt.Println("error", err)
		os.Exit(0) // the stuck restore goes with the process
	}
	_ = closer.Close(context.Background())
	fmt.Println("opened")
	os.Exit(0)
}

// garbleSeq writes garbage over the sequence of the middle record in the
// events stream's first block (a record: uint32 length, its top bit
// flagging headers, then the uint64 sequence).
func garbleSeq(t *testing.T, storeDir string) {
	t.Helper()
	p := filepath.Join(eventsMsgsDir(storeDir), "1.blk")
	b, starts := testkit.BlockRecords(t, p)
	at := starts[len(starts)/2] + 4
	copy(b[at:at+8], []byte{0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0x25})
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A garbage sequence in a record of a cleanly closed store makes
// nats-server's restore run without end; opening the log, or a Reader on
// the store (replay, export), fails at its deadline with the cause and the
// store named instead of hanging.
func TestARestoreThatDoesNotEndFailsInBoundedTime(t *testing.T) {
	for _, reader := range []bool{false, true} {
		t.Run(map[bool]string{false: "log", true: "reader"}[reader], func(t *testing.T) { restoreNeverEnds(t, reader) })
	}
}

func restoreNeverEnds(t *testing.T, reader bool) {
	dir := t.TempDir()
	l, err := Open(testkit.Context(t), Options{StoreDir: dir, Logger: testkit.Logger(t, 0)})
	if err != nil {
		t.Fatal(err)
	}
	publishBans(t, l, 20)
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	garbleSeq(t, dir)

	ctx, cancel := context.WithTimeout(testkit.Context(t), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestRestoreHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), restoreHelperEnv+"="+dir)
	if reader {
		cmd.Env = append(cmd.Env, restoreReaderEnv+"=1")
	}
	begin := time.Now()
	out, err := cmd.Output()
	took := time.Since(begin)
	if err != nil {
		t.Fatalf("helper: %v after %s: %s", err, took, out)
	}
	if !strings.Contains(string(out), "error ") || !strings.Contains(string(out), "did not finish restoring the store") ||
		!strings.Contains(string(out), dir) {
		t.Fatalf("opening a store whose restore never ends: %q after %s, want the cause named", out, took)
	}
	t.Logf("failed after %s: %s", took.Round(time.Millisecond), strings.TrimSpace(string(out)))
}
