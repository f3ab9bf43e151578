package eventlog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
)

// The embedded server in its own process. In-process, the server's
// goroutines share the router's processors and heap: on a busy node its
// writes, block-cache growth and the collector's marking of its structures
// run between requests in stretches of milliseconds that the Go scheduler
// does not interrupt. In a child process the kernel schedules the two
// apart, a request's goroutine wakes when its packet arrives, and the
// router's heap holds only the router. It is still the binary's own
// embedded server: nothing else to install, the same store, the same lock.
//
// The router starts the process (its executable again, with ProcessArg)
// after it locked the store, hands it the lock's open file, waits for it
// to serve, and connects over loopback with a random token. A supervisor
// starts it again, on the same address, when it exits while the log is
// open: after a store fault (the process asks for it once the disk has
// room, and the new server recovers the streams from their files) or a
// crash (with backoff). The client reconnects by itself; meanwhile the
// log is unreachable and the publisher holds events as in any outage.
// Closing the log closes the process's stdin, which shuts its server
// down; one that has not exited within processStopWait is killed.
const (
	processStopWait     = 10 * time.Second
	processRestartFirst = 100 * time.Millisecond
	processRestartMax   = 5 * time.Second
)

// Process runs the embedded server of a file store in a child process.
type Process struct {
	// Command returns a new command that runs ServeProcess (cmd/airouter:
	// its own executable with ProcessArg). The log sets its standard
	// streams, ExtraFiles and process attributes.
	Command func() *exec.Cmd
}

// serverProc is the router's side of its server process.
type serverProc struct {
	log   hclog.Logger // the log's own lines
	nats  hclog.Logger // the server's lines
	cmd   func() *exec.Cmd
	spec  processSpec
	lock  *os.File
	clock clockwork.Clock

	url          string                 // the server's client URL, the same for every process
	pid          atomic.Int64           // the process serving now
	fault        atomic.Pointer[string] // the store fault last reported; nil or "": none
	lastErr      atomic.Pointer[string] // the last error line the process logged
	restarts     atomic.Uint64          // processes started after the first
	faultRestart atomic.Uint64          // of those, restarts the process asked for after a store fault

	ctx    context.Context // done when the log closes
	cancel context.CancelFunc
	done   chan struct{} // closed when the supervisor has stopped the process
	// stopErr is how the last process stopped; read after done.
	stopErr error
}

// running is one server process.
type running struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{} // closed when it has exited; err is then set
	err   error
	logs  chan struct{} // closed when its log lines are all relayed
}

// startProcess starts the server process on the locked store dir and
// waits until it serves, within ctx.
func startProcess(ctx context.Context, o Options, dir string, lock *os.File) (*serverProc, error) {
	listen, token := o.Listen, ""
	if listen == "" {
		// Loopback for the router alone: a token keeps other local users
		// off it. events.listen is for any NATS client, without one.
		listen = "127.0.0.1:0"
		var err error
		if token, err = newToken(); err != nil {
			return nil, err
		}
	}
	level := o.Logger.GetLevel()
	switch {
	case level == hclog.NoLevel:
		level = hclog.Info
	case level > hclog.Error:
		level = hclog.Error // a failed start's message names its cause
	}
	p := &serverProc{
		log: o.Logger.Named("eventlog"), nats: o.Logger.Named("nats"), cmd: o.Process.Command, lock: lock,
		clock: o.Clock, done: make(chan struct{}),
		spec: processSpec{Dir: dir, Listen: listen, Token: token, MaxBytes: o.MaxBytes,
			ServerName: o.ServerName, Level: level.String()},
	}
	r, err := p.spawn(ctx)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(p.url)
	if err != nil {
		r.stop(p.clock)
		return nil, fmt.Errorf("the event log's server process named a bad URL %q: %w", p.url, err)
	}
	p.spec.Listen = u.Host // a new process listens where the client reconnects
	p.ctx, p.cancel = context.WithCancel(context.Background())
	go p.supervise(r)
	return p, nil
}

func newToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make a token for the event log's server: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// spawn starts one process and waits until it serves, exits, or ctx is
// done.
func (p *serverProc) spawn(ctx context.Context) (*running, error) {
	r, status, err := p.launch()
	if err != nil {
		return nil, err
	}
	ready := make(chan string, 1)
	go p.readStatus(status, ready)
	select {
	case u := <-ready:
		if p.url == "" {
			p.url = u
		}
		p.pid.Store(int64(r.cmd.Process.Pid))
		return r, nil
	case <-r.done:
		<-r.logs // its last lines name the cause
		cause := "it logged no error"
		if e := p.lastErr.Load(); e != nil {
			cause = *e
		}
		return nil, fmt.Errorf("the event log's server process exited before it served (%v): %s", r.err, cause)
	case <-ctx.Done():
		_ = r.cmd.Process.Kill()
		<-r.done
		return nil, fmt.Errorf("start the event log's server process: %w", ctx.Err())
	}
}

// launch starts the command with its streams and hands it the spec; it
// returns the process and its status stream.
func (p *serverProc) launch() (*running, io.Reader, error) {
	cmd := p.cmd()
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("start the event log's server process: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(outR, outW)
		return nil, nil, fmt.Errorf("start the event log's server process: %w", err)
	}
	stdin, err := cmd.StdinPipe()
	if err == nil {
		cmd.Stdout, cmd.Stderr, cmd.ExtraFiles = outW, errW, []*os.File{p.lock}
		detach(cmd)
		err = cmd.Start()
	}
	closeAll(outW, errW) // the child holds its own copies
	if err != nil {
		closeAll(outR, errR)
		return nil, nil, fmt.Errorf("start the event log's server process: %w", err)
	}
	r := &running{cmd: cmd, stdin: stdin, done: make(chan struct{}), logs: make(chan struct{})}
	go func() {
		p.relayLogs(errR)
		close(r.logs)
	}()
	go func() {
		r.err = cmd.Wait()
		close(r.done)
	}()
	spec, _ := json.Marshal(p.spec) // plain strings and numbers
	if _, err := stdin.Write(append(spec, '\n')); err != nil {
		_ = cmd.Process.Kill()
		<-r.done
		closeAll(outR)
		return nil, nil, fmt.Errorf("hand the event log's server process its spec: %w", err)
	}
	return r, outR, nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// stop closes the process's stdin, which shuts its server down, and
// kills it when it has not exited within processStopWait.
func (r *running) stop(clock clockwork.Clock) error {
	_ = r.stdin.Close()
	select {
	case <-r.done:
		return r.err
	case <-clock.After(processStopWait):
	}
	_ = r.cmd.Process.Kill()
	<-r.done
	return fmt.Errorf("the event log's server process did not stop within %s; killed it", processStopWait)
}

// close stops the process for good.
func (p *serverProc) close() error {
	p.cancel()
	<-p.done
	return p.stopErr
}

// supervise starts the process again whenever it exits before close.
func (p *serverProc) supervise(r *running) {
	defer close(p.done)
	for {
		select {
		case <-p.ctx.Done():
			p.stopErr = r.stop(p.clock)
			return
		case <-r.done:
		}
		restart := p.exited(r)
		if r = p.respawn(); r == nil {
			return
		}
		p.restarts.Add(1)
		if restart {
			p.faultRestart.Add(1)
		}
		p.log.Info("the event log's server process serves again", "pid", r.cmd.Process.Pid)
	}
}

// exited logs why the process ended and reports whether it asked for a
// restart after a store fault.
func (p *serverProc) exited(r *running) bool {
	var exit *exec.ExitError
	if errors.As(r.err, &exit) && exit.ExitCode() == ProcessExitRestart {
		p.log.Warn("restarting the event log's server process to recover its store after a fault",
			"fault", p.currentFault())
		return true
	}
	p.log.Error("the event log's server process exited; starting it again", "error", r.err)
	return false
}

// respawn starts a new process, with backoff between failed tries, until
// one serves or the log closes (nil).
func (p *serverProc) respawn() *running {
	wait := processRestartFirst
	for {
		select {
		case <-p.ctx.Done():
			return nil
		case <-p.clock.After(wait):
		}
		sctx, cancel := context.WithTimeout(p.ctx, restoreTimeout+defaultStartTimeout)
		r, err := p.spawn(sctx)
		cancel()
		if err == nil {
			return r
		}
		if p.ctx.Err() != nil {
			return nil
		}
		p.log.Error("cannot start the event log's server process yet; trying again", "error", err, "in", wait)
		wait = min(2*wait, processRestartMax)
	}
}

func (p *serverProc) currentFault() string {
	if f := p.fault.Load(); f != nil {
		return *f
	}
	return ""
}
