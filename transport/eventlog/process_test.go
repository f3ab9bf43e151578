package eventlog

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/internal/testkit"
)

// helperEnv makes the test binary act as a second airouter process (see
// TestHelperProcess): it opens the store in the named dir, stores the
// number of events given by helperEvents, prints "ready <pid>" and waits
// to be killed, never closing the log.
const (
	helperEnv     = "EVENTLOG_HELPER_DIR"
	helperEvents  = "EVENTLOG_HELPER_EVENTS"
	helperProcess = "EVENTLOG_HELPER_PROCESS" // "1": its server runs in its own process
)

func TestHelperProcess(t *testing.T) {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		t.Skip("only runs as a subprocess of another test")
	}
	n, _ := strconv.Atoi(os.Getenv(helperEvents))
	ctx := context.Background()
	o := Options{StoreDir: dir}
	if os.Getenv(helperProcess) == "1" {
		o.Process = testProcess()
	}
	l, err := Open(ctx, o)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	if n <= 100 { // acknowledged one by one
		for i := range n {
			ev := banEvent(fmt.Sprintf("ban-%d", i), "c1", "m1")
			if _, err := l.PublishControl(ctx, ev); err != nil {
				fmt.Println("error", err)
				os.Exit(2)
			}
		}
	} else {
		fillLog(l, n)
	}
	fmt.Println("ready", os.Getpid())
	// Exit without Close when the parent goes away; normally it kills us.
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	os.Exit(3)
}

// fillLog publishes n outcomes through Publish at the pipeline's pace and
// waits until they are acknowledged.
func fillLog(l *Log, n int) {
	for i := 0; i < n; {
		if l.Publish(outcomeEvent(i)) {
			i++
			continue
		}
		_ = l.Flush(context.Background()) // queue full: let it drain
	}
	_ = l.Flush(context.Background())
}

// startHolder runs TestHelperProcess on dir and returns once it is ready.
// The caller kills it.
func startHolder(t testing.TB, dir string, events int) *exec.Cmd {
	t.Helper()
	return startHolderIn(t, dir, events, false)
}

// startHolderIn is startHolder, with the holder's server in its own
// process when process is set.
func startHolderIn(t testing.TB, dir string, events int, process bool) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir, helperEvents+"="+strconv.Itoa(events))
	if process {
		cmd.Env = append(cmd.Env, helperProcess+"=1")
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "ready ") {
			return cmd
		}
		if strings.HasPrefix(line, "error ") {
			t.Fatalf("helper process: %s", line)
		}
	}
	t.Fatalf("helper process ended before it was ready: %v", sc.Err())
	return nil
}

// Another process holding the store is named in the refusal; once it is
// killed (no Close, like a crash) the lock is free and every acknowledged
// event is there.
func TestStoreLockAcrossProcessesAndCrashRecovery(t *testing.T) {
	dir := t.TempDir()
	cmd := startHolder(t, dir, 20)

	_, err := Open(testkit.Context(t), Options{StoreDir: dir, Logger: testkit.Logger(t, hclog.Warn)})
	want := fmt.Sprintf("is in use by another airouter (pid %d)", cmd.Process.Pid)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open while another process holds the store: %v; want %q", err, want)
	}

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	l := openTest(t, Options{StoreDir: dir})
	evs := readAll(t, l)
	if len(evs) != 20 || evs[19].ID != "ban-19" {
		t.Fatalf("after the crash: %d events, want the 20 acknowledged", len(evs))
	}
}
