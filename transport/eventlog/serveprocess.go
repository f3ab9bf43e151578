package eventlog

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats-server/v2/server"
)

// The embedded server's own process. A router whose Options.Process is set
// starts its executable again with ProcessArg; that process calls
// ServeProcess, which runs the same embedded server startServer runs
// in-process, on the store the router locked, listening on loopback.
//
// The conversation is on the standard streams:
//   - stdin: one line of JSON (processSpec) from the router, then nothing;
//     its end (the router closed it, or died) stops the server;
//   - stdout: "ready <url>" once the server serves clients, then the
//     store's health every checkInterval: "fault <cause>" or "ok";
//   - stderr: the server's log lines as hclog JSON, which the router logs.
//
// The store lock is inherited (ExtraFiles, fd 3): a flock belongs to the
// open file, which both processes hold, so the store stays locked while
// either holds it; the process checks that fd 3 is the store's lock file
// and holds its lock before it serves. The router only closes its
// descriptor, so a process that has not ended yet keeps the store locked.
//
// The process ignores SIGINT, SIGTERM and SIGHUP (ServeProcessMain): a
// terminal's Ctrl-C, a service manager stopping the whole group, or a
// reload signal meant for the router would otherwise stop the server
// before the router has drained and saved its checkpoint. Its life is its
// stdin's (the router closes it) and its router's (the kernel kills it
// when the router dies).

// ProcessArg is the argument the router's executable runs ServeProcess
// under.
const ProcessArg = "serve-events"

// Exit codes of a server process, as ServeProcess returns them.
const (
	ProcessExitOK    = 0
	ProcessExitError = 1
	// ProcessExitRestart asks the router for a new process: the store
	// had a write fault and has room again, and a fresh server recovers
	// the streams from their files.
	ProcessExitRestart = 3
)

// processSpec is what the router tells its server process.
type processSpec struct {
	Dir        string `json:"dir"`
	Listen     string `json:"listen"`
	Token      string `json:"token,omitempty"`
	MaxBytes   int64  `json:"max_bytes"`
	ServerName string `json:"server_name"`
	Level      string `json:"level"`
}

// ServeProcessMain is a server process's main: it ignores the stop and
// reload signals (above) and runs ServeProcess on the standard streams.
// It returns the process's exit code.
func ServeProcessMain() int {
	signal.Ignore(os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	return ServeProcess(context.Background(), os.Stdin, os.Stdout, os.Stderr)
}

// Status lines of a server process on its stdout.
const (
	statusReady = "ready "
	statusFault = "fault "
	statusOK    = "ok"
)

// ServeProcess runs the embedded server of a server process until in ends
// or ctx is done, and returns the process's exit code. Its store checks
// run every checkInterval.
func ServeProcess(ctx context.Context, in io.Reader, out, logs io.Writer) int {
	br := bufio.NewReader(in)
	line, err := br.ReadBytes('\n')
	var spec processSpec
	if err == nil {
		err = json.Unmarshal(line, &spec)
	}
	if err != nil {
		fmt.Fprintf(logs, "airouter %s: read the server's spec on stdin: %v\n", ProcessArg, err)
		return ProcessExitError
	}
	logger := hclog.New(&hclog.LoggerOptions{
		JSONFormat: true, Output: logs, Level: hclog.LevelFromString(spec.Level),
	})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, br)
		cancel()
	}()
	if err := holdsLock(spec.Dir, inheritedLockFD); err != nil {
		logger.Error("the event log's server will not serve a store its router did not lock", "error", err)
		return ProcessExitError
	}
	o := Options{
		StoreDir: spec.Dir, Storage: StorageFile, Listen: spec.Listen, MaxBytes: spec.MaxBytes,
		ServerName: spec.ServerName, Logger: logger, authToken: spec.Token,
	}
	s, err := startServer(ctx, o, spec.Dir)
	if err != nil {
		logger.Error("the event log's server did not start", "error", err)
		return ProcessExitError
	}
	defer func() {
		s.Shutdown()
		s.WaitForShutdown()
	}()
	fmt.Fprintln(out, statusReady+s.ClientURL())
	t := time.NewTicker(checkInterval)
	defer t.Stop()
	return watchStore(ctx, s, out, t.C)
}

// watchStore reports the store's health on out at each tick (a sign of
// life for the router) until ctx is done; a fault with room on the disk
// again ends the process for a fresh server.
func watchStore(ctx context.Context, s *server.Server, out io.Writer, tick <-chan time.Time) int {
	for {
		select {
		case <-ctx.Done():
			return ProcessExitOK
		case <-tick:
		}
		cause := storeFault(s)
		if cause == "" {
			fmt.Fprintln(out, statusOK)
		} else {
			fmt.Fprintln(out, statusFault+cause)
		}
		if cause == "" {
			continue
		}
		if free, err := freeBytes(s.StoreDir()); err == nil && free >= storeRoom {
			return ProcessExitRestart
		}
	}
}
