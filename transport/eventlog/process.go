package eventlog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"sync"
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
// to serve, and connects over loopback. Every process listens on a port of
// its own choosing and asks for a token of its own, so a port or token a
// process held is worth nothing once it is gone; the client's dialer and
// token handler read the current ones (process_io.go). events.listen, for
// other NATS clients, is a fixed address without a token.
//
// A supervisor (process_supervise.go) starts the process again when it
// exits while the log is open: after a store fault (the process asks for
// it once the disk has room, and the new server recovers the streams from
// their files), a crash, or a process that stopped answering (no status
// line for processSilence), with backoff. The client reconnects by itself;
// meanwhile the log is unreachable and the publisher holds events as in
// any outage. Closing the log closes the process's stdin, which shuts its
// server down; one that has not exited within processStopWait (or the
// close's deadline) is killed.
const (
	processStopWait  = 10 * time.Second
	processStopGrace = 3 * time.Second
	processKillWait  = 5 * time.Second
	// processStartWait bounds a start when the caller's context has no
	// deadline: the server's own restore bound and its wait to serve.
	processStartWait = restoreTimeout + defaultStartTimeout
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
	spec  processSpec // Token is "" while spawn makes a new one for each process
	fixed bool        // spec.Listen is events.listen: the same address, no token
	lock  *os.File
	clock clockwork.Clock

	serving      atomic.Pointer[endpoint] // where the serving process listens; nil while none serves
	url          string                   // the first process's client URL
	pid          atomic.Int64             // the process serving now, 0 while none does
	epoch        time.Time                // the clock's reading heard counts from
	heard        atomic.Int64             // the clock's time since epoch at its last status line
	fault        atomic.Pointer[string]   // the store fault last reported; nil or "": none
	lastErr      atomic.Pointer[string]   // the last error line of the process starting or serving
	restarts     atomic.Uint64            // processes started after the first
	faultRestart atomic.Uint64            // of those, restarts the process asked for after a store fault

	ctx       context.Context // done when the log closes
	cancel    context.CancelFunc
	done      chan struct{} // closed when the supervisor has stopped the process
	closeOnce sync.Once
	stopCtx   context.Context // bounds the last process's stop; set by close before cancel
	stopErr   error           // how the last process stopped; read after done
}

// endpoint is where one server process listens and the token it asks for
// ("" with a fixed address).
type endpoint struct {
	addr, token string
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
// waits until it serves, within ctx (or processStartWait).
func startProcess(ctx context.Context, o Options, dir string, lock *os.File) (*serverProc, error) {
	level := o.Logger.GetLevel()
	switch {
	case level == hclog.NoLevel:
		level = hclog.Info
	case level > hclog.Error:
		level = hclog.Error // a failed start's message names its cause
	}
	p := &serverProc{
		log: o.Logger.Named("eventlog"), nats: o.Logger.Named("nats"), cmd: o.Process.Command, lock: lock,
		clock: o.Clock, epoch: o.Clock.Now(), done: make(chan struct{}), fixed: o.Listen != "",
		spec: processSpec{Dir: dir, Listen: o.Listen, MaxBytes: o.MaxBytes,
			ServerName: o.ServerName, Level: level.String()},
	}
	if !p.fixed {
		p.spec.Listen = "127.0.0.1:0"
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, processStartWait)
		defer cancel()
	}
	r, err := p.spawn(ctx)
	if err != nil {
		return nil, err
	}
	if p.fixed {
		// events.listen with port 0: the port the first process got is the
		// address other clients were told.
		p.spec.Listen = p.serving.Load().addr
	}
	p.pid.Store(int64(r.cmd.Process.Pid))
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
// done; once it serves, the client's dialer and token are its.
func (p *serverProc) spawn(ctx context.Context) (*running, error) {
	spec := p.spec
	if !p.fixed {
		tok, err := newToken()
		if err != nil {
			return nil, err
		}
		spec.Token = tok
	}
	p.lastErr.Store(nil)
	r, status, err := p.launch(spec)
	if err != nil {
		return nil, err
	}
	ready := make(chan string, 1)
	go p.readStatus(status, ready)
	select {
	case u := <-ready:
		return r, p.serve(r, u, spec.Token)
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

// serve makes r, serving at u with token, the process the client dials.
func (p *serverProc) serve(r *running, u, token string) error {
	pu, err := url.Parse(u)
	if err != nil || pu.Host == "" {
		_ = r.cmd.Process.Kill()
		<-r.done
		return fmt.Errorf("the event log's server process named a bad URL %q", u)
	}
	if p.url == "" {
		p.url = u
	}
	p.serving.Store(&endpoint{addr: pu.Host, token: token})
	p.hear()
	return nil
}

// launch starts the command with its streams and hands it spec; it
// returns the process and its status stream.
func (p *serverProc) launch(spec processSpec) (*running, io.Reader, error) {
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
	line, _ := json.Marshal(spec) // plain strings and numbers
	if _, err := stdin.Write(append(line, '\n')); err != nil {
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
// kills it when it has not exited within processStopWait or by ctx's end,
// granting it processStopGrace even when ctx is over (a close whose
// deadline went on draining an outage). After a kill it waits for the
// exit at most processKillWait: a process stuck in the kernel (a hung
// disk) keeps the store's lock with its own descriptor until it ends.
func (r *running) stop(ctx context.Context, clock clockwork.Clock) error {
	_ = r.stdin.Close()
	select {
	case <-r.done:
		return r.err
	case <-clock.After(processStopGrace):
	}
	select {
	case <-r.done:
		return r.err
	case <-clock.After(processStopWait - processStopGrace):
	case <-ctx.Done():
	}
	_ = r.cmd.Process.Kill()
	select {
	case <-r.done:
		return fmt.Errorf("the event log's server process did not stop in time (within %s or the close's deadline); killed it", processStopWait)
	case <-clock.After(processKillWait):
		return fmt.Errorf("the event log's server process did not stop in time and has not ended %s after it was killed (pid %d)",
			processKillWait, r.cmd.Process.Pid)
	}
}

// close stops the process for good, within ctx or processStopWait (see
// running.stop).
func (p *serverProc) close(ctx context.Context) error {
	var err error
	p.closeOnce.Do(func() {
		p.stopCtx = ctx
		p.cancel()
		<-p.done
		err = p.stopErr
	})
	return err
}
