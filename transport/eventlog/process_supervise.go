package eventlog

import (
	"context"
	"errors"
	"os/exec"
	"time"
)

// Restarts of the server process. A process that served processSteady
// before it ended is started again after processRestartFirst; one that
// ends sooner doubles the wait, up to processRestartMax, so a process that
// crashes (or asks for a restart) as soon as it serves is started at most
// every 5 s. A process writes a status line every checkInterval; one
// silent for processSilence (stopped, or hung) is killed and started
// again.
const (
	processRestartFirst = 100 * time.Millisecond
	processRestartMax   = 5 * time.Second
	processSteady       = 30 * time.Second
	processSilence      = 15 * time.Second
)

// supervise starts the process again whenever it exits before close,
// and kills one that stopped answering.
func (p *serverProc) supervise(r *running) {
	defer close(p.done)
	var wait time.Duration // the pause before the last start; none yet
	tick := p.clock.NewTicker(checkInterval)
	defer tick.Stop()
	for {
		began := p.clock.Now()
		if !p.watch(r, tick.Chan()) {
			p.stopErr = r.stop(p.stopCtx, p.clock)
			p.gone()
			return
		}
		p.gone()
		restart := p.exited(r)
		if r, wait = p.respawn(restartWait(wait, p.clock.Since(began))); r == nil {
			return
		}
		// The fault restart is counted first: checkProcess reads the two
		// counters in the other order.
		if restart {
			p.faultRestart.Add(1)
		}
		p.restarts.Add(1)
		p.pid.Store(int64(r.cmd.Process.Pid)) // after the count: /health shows both or neither
		p.log.Info("the event log's server process serves again", "pid", r.cmd.Process.Pid)
	}
}

// watch waits for r to exit (true) or the log to close (false), and
// kills r when it has written no status line for processSilence.
func (p *serverProc) watch(r *running, tick <-chan time.Time) bool {
	for {
		select {
		case <-p.ctx.Done():
			return false
		case <-r.done:
			return true
		case <-tick:
			silent := p.silence()
			if silent >= processSilence {
				p.log.Error("the event log's server process stopped answering; killing it",
					"pid", r.cmd.Process.Pid, "silent", silent.Round(time.Second))
				_ = r.cmd.Process.Kill()
			}
		}
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

// restartWait is the pause before the next start of a process, after a
// pause of last (0: none yet) before the one that ended having served for
// served: the first pause after a steady process, else twice the last, up
// to processRestartMax.
func restartWait(last, served time.Duration) time.Duration {
	if last == 0 || served >= processSteady {
		return processRestartFirst
	}
	return min(2*last, processRestartMax)
}

// respawn starts a new process after wait, with restartWait's longer
// pauses after failed tries, until one serves or the log closes (nil). It
// returns the pause it last made.
func (p *serverProc) respawn(wait time.Duration) (*running, time.Duration) {
	for {
		select {
		case <-p.ctx.Done():
			return nil, wait
		case <-p.clock.After(wait):
		}
		sctx, cancel := context.WithTimeout(p.ctx, processStartWait)
		r, err := p.spawn(sctx)
		cancel()
		if err == nil {
			return r, wait
		}
		if p.ctx.Err() != nil {
			return nil, wait
		}
		wait = restartWait(wait, 0)
		p.log.Error("cannot start the event log's server process yet; trying again", "error", err, "in", wait)
	}
}

func (p *serverProc) currentFault() string {
	if f := p.fault.Load(); f != nil {
		return *f
	}
	return ""
}

// hear notes a sign of life of the serving process.
func (p *serverProc) hear() { p.heard.Store(int64(p.clock.Since(p.epoch))) }

// silence is how long the serving process has written nothing, on the
// clock's monotonic reading (a step of the wall clock changes nothing).
func (p *serverProc) silence() time.Duration {
	return p.clock.Since(p.epoch) - time.Duration(p.heard.Load())
}

// gone notes that no process serves: the client dials nothing until the
// next one does.
func (p *serverProc) gone() {
	p.pid.Store(0)
	p.serving.Store(nil)
}
