package eventlog

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

// TestMain lets the test binary be a log's server process: testProcess
// starts it again with ProcessArg.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == ProcessArg {
		os.Exit(ServeProcessMain())
	}
	os.Exit(m.Run())
}

// testProcess runs a log's server in the test binary as a child process.
func testProcess() *Process {
	return &Process{Command: func() *exec.Cmd { return exec.Command(os.Args[0], ProcessArg) }}
}

// alive reports whether pid is a running process (not yet reaped).
func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// A log whose server runs in its own process stores, acknowledges and
// delivers like one in-process: the server is another PID, the store is
// locked while either lives, a client without the token is refused, the
// server's lines reach the router's logger, and Close stops the process.
// The store it leaves opens in-process with every event.
func TestProcessServesTheLog(t *testing.T) {
	dir := t.TempDir()
	logs := new(testkit.Buffer)
	l, err := Open(testkit.Context(t), Options{StoreDir: dir, Process: testProcess(),
		Logger: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info})})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	pid := l.Stats().ServerPID
	if pid == 0 || pid == os.Getpid() || !alive(pid) {
		t.Fatalf("server process pid %d (this process %d)", pid, os.Getpid())
	}
	cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if !strings.Contains(string(cmdline), ProcessArg) {
		t.Errorf("server process runs %q, want %s", cmdline, ProcessArg)
	}
	if lock, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/3"); lock != filepath.Join(dir, lockName) {
		t.Errorf("the server process's fd 3 is %q, want the store's lock file", lock)
	}
	ctx := testkit.Context(t)
	if _, err := l.PublishControl(ctx, banEvent("ban-1", "c1", "m1")); err != nil {
		t.Fatalf("PublishControl: %v", err)
	}
	fillLog(l, 50)
	if got := readAll(t, l); len(got) != 51 || got[0].ID != "ban-1" {
		t.Fatalf("read %d events, want the ban and 50 outcomes", len(got))
	}
	if _, err := Open(ctx, Options{StoreDir: dir}); !errors.Is(err, ErrStoreInUse) {
		t.Errorf("a second Open on the store: %v, want ErrStoreInUse", err)
	}
	if nc, err := nats.Connect("nats://" + l.conn.proc.serving.Load().addr); err == nil || !strings.Contains(err.Error(), "Authorization Violation") {
		if nc != nil {
			nc.Close()
		}
		t.Errorf("a client without the token: %v, want an authorization violation", err)
	}
	token := l.conn.proc.serving.Load().token
	if len(token) < 32 || strings.Contains(string(cmdline), token) || strings.Contains(logs.String(), token) {
		t.Errorf("the token (%d chars) is missing or shows in the process's argv or the logs", len(token))
	}
	if !strings.Contains(logs.String(), "nats") || len(logs.Lines("Server is ready")) == 0 {
		t.Errorf("the server's lines did not reach the router's logger:\n%s", logs.String())
	}

	if err := l.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if alive(pid) {
		t.Errorf("server process %d still runs after Close", pid)
	}
	again := openTest(t, Options{StoreDir: dir})
	if got := readAll(t, again); len(got) != 51 {
		t.Errorf("in-process after the server process: %d events, want 51", len(got))
	}
}

// A server process that dies is started again, with a token of its own:
// the client reconnects, a ban published after it is stored, both bans
// are delivered, and a crash is not counted as a store restart.
func TestProcessComesBackAfterACrash(t *testing.T) {
	l := openTest(t, Options{StoreDir: t.TempDir(), Process: testProcess()})
	ctx := testkit.Context(t)
	if _, err := l.PublishControl(ctx, banEvent("ban-1", "c1", "m1")); err != nil {
		t.Fatal(err)
	}
	got := make(chan domain.Event, 8)
	stop, err := l.Consume(ctx, 0, func(ev domain.Event, _ uint64) { got <- ev })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	if ev := testkit.Receive(t, "the first ban", got); ev.ID != "ban-1" {
		t.Fatalf("first event %q", ev.ID)
	}
	old, oldToken := l.Stats().ServerPID, l.conn.proc.serving.Load().token
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "a new server process", func() bool {
		p := l.Stats().ServerPID
		return p != old && alive(p)
	})
	testkit.Eventually(t, "the second ban stored", func() bool {
		_, err := l.PublishControl(ctx, banEvent("ban-2", "c1", "m1"))
		return err == nil
	})
	if ev := testkit.Receive(t, "the second ban", got); ev.ID != "ban-2" {
		t.Fatalf("after the crash: event %q, want ban-2", ev.ID)
	}
	if tok := l.conn.proc.serving.Load().token; tok == oldToken {
		t.Error("the new server process took its predecessor's token")
	}
	if s := l.Stats(); s.StoreRestarts != 0 || s.ServerRestarts != 1 {
		t.Errorf("StoreRestarts %d, ServerRestarts %d after a crash, want 0 (not a store fault) and 1", s.StoreRestarts, s.ServerRestarts)
	}
}

// A router killed without closing its log takes its server process with
// it (the kernel's parent-death signal, and the end of its stdin): the
// store's lock, which both held, is then free, and what was acknowledged
// is there.
func TestProcessDiesWithItsRouter(t *testing.T) {
	dir := t.TempDir()
	holder := startHolderIn(t, dir, 5, true)
	if _, err := Open(testkit.Context(t), Options{StoreDir: dir}); !errors.Is(err, ErrStoreInUse) {
		t.Fatalf("Open while the router lives: %v, want ErrStoreInUse", err)
	}
	if err := holder.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = holder.Wait()
	var l *Log
	testkit.Eventually(t, "the store free once the server process died", func() bool {
		var err error
		l, err = Open(testkit.Context(t), Options{StoreDir: dir, Logger: testkit.Logger(t, hclog.Warn)})
		return err == nil
	})
	t.Cleanup(func() { _ = l.Close(context.Background()) })
	if got := readAll(t, l); len(got) != 5 {
		t.Errorf("after the router died: %d events, want the 5 acknowledged", len(got))
	}
}

// Lines of the server process are logged at their level with their
// fields; anything else is not JSON, an error as it was written.
func TestParseLogLine(t *testing.T) {
	for _, tc := range []struct {
		line  string
		level hclog.Level
		msg   string
		args  []any
		json  bool
	}{
		{`{"@level":"info","@message":"Server is ready","@module":"nats","@timestamp":"x"}`, hclog.Info, "Server is ready", nil, true},
		{`{"@level":"error","@message":"boom","b":2,"a":"x"}`, hclog.Error, "boom", []any{"a", "x", "b", 2.0}, true},
		{`{"@message":"no level"}`, hclog.Info, "no level", nil, true},
		{`panic: runtime error`, hclog.Error, "panic: runtime error", nil, false},
	} {
		level, msg, args, ok := parseLogLine([]byte(tc.line))
		if level != tc.level || msg != tc.msg || len(args) != len(tc.args) || ok != tc.json {
			t.Errorf("%s: %v %q %v", tc.line, level, msg, args)
			continue
		}
		for i := range args {
			if args[i] != tc.args[i] {
				t.Errorf("%s: args %v, want %v", tc.line, args, tc.args)
			}
		}
	}
}

// A server process that cannot start (its address is taken) fails Open
// with the server's own message, and leaves the store unlocked.
func TestProcessThatCannotStartFailsOpenWithItsCause(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dir := t.TempDir()
	_, err = Open(testkit.Context(t), Options{StoreDir: dir, Listen: taken.Addr().String(), Process: testProcess(),
		Logger: testkit.Logger(t, hclog.Off)})
	if err == nil || !strings.Contains(err.Error(), "exited before it served") || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("Open on a taken address: %v; want the process's exit and the server's cause", err)
	}
	openTest(t, Options{StoreDir: dir})
}

// A server process that stops answering (stopped here with SIGSTOP, so it
// writes no status line) is killed once the log's clock has passed
// processSilence without one, and a new process serves.
func TestProcessThatStopsAnsweringIsReplaced(t *testing.T) {
	clock := clockwork.NewFakeClock()
	l := openTest(t, Options{StoreDir: t.TempDir(), Process: testProcess(), Clock: clock})
	old := l.Stats().ServerPID
	if err := syscall.Kill(old, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	replaced := false
	t.Cleanup(func() {
		if !replaced { // else the supervisor killed and reaped it: its pid may be another's now
			_ = syscall.Kill(old, syscall.SIGKILL)
		}
	})
	testkit.Eventually(t, "a new server process once the old one was silent", func() bool {
		clock.Advance(time.Second)
		s := l.Stats()
		return s.ServerPID != 0 && s.ServerPID != old && alive(s.ServerPID) && s.ServerRestarts == 1
	})
	replaced = true
	if s := l.Stats(); s.ServerRestarts != 1 {
		t.Errorf("ServerRestarts %d, want 1", s.ServerRestarts)
	}
	if _, err := l.PublishControl(testkit.Context(t), banEvent("ban-1", "c1", "m1")); err != nil {
		t.Errorf("a ban after the replacement: %v", err)
	}
}

// The pause before a start: the first after a process that served
// processSteady, doubling after one that did not, bounded.
func TestRestartWait(t *testing.T) {
	for _, tc := range []struct{ last, served, want time.Duration }{
		{0, 0, processRestartFirst},
		{0, time.Hour, processRestartFirst},
		{processRestartFirst, time.Second, 2 * processRestartFirst},
		{processRestartFirst, processSteady, processRestartFirst},
		{4 * time.Second, time.Second, processRestartMax},
		{processRestartMax, 0, processRestartMax},
	} {
		if got := restartWait(tc.last, tc.served); got != tc.want {
			t.Errorf("restartWait(%s, %s) = %s, want %s", tc.last, tc.served, got, tc.want)
		}
	}
}

// ServeProcess started by hand, without its router's lock on fd 3,
// refuses the store.
func TestServeProcessRefusesAnUnlockedStore(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, lockName), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	in := strings.NewReader(`{"dir":"` + dir + `","listen":"127.0.0.1:0","max_bytes":1048576}` + "\n")
	var out, logs strings.Builder
	if code := ServeProcess(testkit.Context(t), in, &out, &logs); code != ProcessExitError ||
		!strings.Contains(logs.String(), "will not serve a store its router did not lock") || out.Len() != 0 {
		t.Errorf("exit %d, stdout %q, logs %q", code, out.String(), logs.String())
	}
}

// A crash's trace (lines that are not JSON) is one ERROR entry, between
// the JSON lines around it, and its first line is the process's last
// error; blank lines are dropped.
func TestRelayLogsGathersATrace(t *testing.T) {
	out := new(testkit.Buffer)
	p := &serverProc{nats: hclog.New(&hclog.LoggerOptions{Output: out, Level: hclog.Info, JSONFormat: true})}
	p.relayLogs(strings.NewReader(`{"@level":"info","@message":"before"}` + "\n\n" +
		"panic: boom\n\ngoroutine 1 [running]:\nmain.main()\n" +
		`{"@level":"warn","@message":"after"}` + "\n"))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "before") || !strings.Contains(lines[2], "after") {
		t.Fatalf("relayed %d entries, want before, the trace, after:\n%s", len(lines), out.String())
	}
	var trace struct {
		Level, Output string
	}
	if err := json.Unmarshal([]byte(strings.ReplaceAll(lines[1], "@level", "level")), &trace); err != nil ||
		trace.Level != "error" || trace.Output != "panic: boom\ngoroutine 1 [running]:\nmain.main()" {
		t.Errorf("the trace's entry: %s", lines[1])
	}
	if e := p.lastErr.Load(); e == nil || *e != "panic: boom" {
		t.Errorf("last error %v, want the trace's first line", e)
	}
}

// A server process serves only with the lock its router holds: the
// router's own descriptor holds it; another descriptor of the same file,
// opened while the router holds it, does not.
func TestHoldsLockOnlyWithTheRoutersDescriptor(t *testing.T) {
	dir := t.TempDir()
	lk, err := lockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.release()
	if err := holdsLock(dir, int(lk.f.Fd())); err != nil {
		t.Errorf("the router's descriptor: %v", err)
	}
	other, err := os.Open(filepath.Join(dir, lockName))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := holdsLock(dir, int(other.Fd())); !errors.Is(err, ErrStoreInUse) {
		t.Errorf("another descriptor while the router holds the lock: %v, want ErrStoreInUse", err)
	}
	if err := holdsLock(t.TempDir(), int(lk.f.Fd())); err == nil {
		t.Error("the router's descriptor passed for another store")
	}
}
