package eventlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"
)

// maxProcessLine bounds one line the server process writes.
const maxProcessLine = 1 << 20

// readStatus reads the process's status lines until it exits: its URL
// once it serves (handed to ready), then its store's health every
// checkInterval. Each line is a sign of life (heard).
func (p *serverProc) readStatus(r io.Reader, ready chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxProcessLine)
	for sc.Scan() {
		line := sc.Text()
		p.hear()
		switch {
		case strings.HasPrefix(line, statusReady):
			// A new process starts without the fault its predecessor had;
			// if the store still has it, its first check says so.
			p.fault.Store(nil)
			select {
			case ready <- strings.TrimPrefix(line, statusReady):
			default:
			}
		case strings.HasPrefix(line, statusFault):
			cause := strings.TrimPrefix(line, statusFault)
			p.fault.Store(&cause)
		case line == statusOK:
			p.fault.Store(nil)
		}
	}
	p.scanEnded(sc.Err())
	drain(r)
}

// scanEnded logs why reading a process's output stopped before its end.
func (p *serverProc) scanEnded(err error) {
	if err != nil {
		p.log.Warn("stopped reading the event log's server process's output", "error", err)
	}
}

// drain reads r to its end (after a line too long to scan, so the process
// never writes into a closed pipe) and closes it.
func drain(r io.Reader) {
	_, _ = io.Copy(io.Discard, r)
	if c, ok := r.(io.Closer); ok {
		_ = c.Close()
	}
}

// maxTraceLines bounds the lines of output that is not JSON (a crash's
// trace) relayed as one entry.
const maxTraceLines = 200

// relayLogs logs the process's lines (hclog JSON) through the router's
// logger at their level. Output that is not JSON (a crash's trace, which
// the runtime writes straight to stderr) is gathered into one ERROR entry.
// Error lines are kept for a failed start's message.
func (p *serverProc) relayLogs(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxProcessLine)
	var trace []string
	flush := func() {
		if len(trace) > 0 {
			p.keepError(trace[0])
			p.nats.Error("the event log's server process wrote", "output", strings.Join(trace, "\n"))
			trace = trace[:0]
		}
	}
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		level, msg, args, ok := parseLogLine(sc.Bytes())
		if !ok {
			if len(trace) < maxTraceLines {
				trace = append(trace, msg)
			}
			continue
		}
		flush()
		if level >= hclog.Error {
			line := msg
			for i := 0; i+1 < len(args); i += 2 {
				line += fmt.Sprintf(" %v=%v", args[i], args[i+1])
			}
			p.keepError(line)
		}
		p.nats.Log(level, msg, args...)
	}
	flush()
	p.scanEnded(sc.Err())
	drain(r)
}

// keepError keeps line as the process's last error, for a failed start's
// message.
func (p *serverProc) keepError(line string) { p.lastErr.Store(&line) }

// parseLogLine splits an hclog JSON line into its level, message and
// the other fields in name order; ok is false for a line that is not
// JSON, whose text is the message.
func parseLogLine(line []byte) (_ hclog.Level, _ string, _ []any, ok bool) {
	var fields map[string]any
	if err := json.Unmarshal(line, &fields); err != nil {
		return hclog.Error, string(line), nil, false
	}
	level, _ := fields["@level"].(string)
	msg, _ := fields["@message"].(string)
	var args []any
	keys := make([]string, 0, len(fields))
	for k := range fields {
		if !strings.HasPrefix(k, "@") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		args = append(args, k, fields[k])
	}
	l := hclog.LevelFromString(level)
	if l == hclog.NoLevel {
		l = hclog.Info
	}
	return l, msg, args, true
}

// checkProcess is checkStore for a server process: it records the store
// fault the process reported, and re-creates the consumers once after
// each new process (restarted), as after a restart of JetStream
// in-process.
func (c *conn) checkProcess(st *storeState, errs *lastError, restarted func()) {
	p := c.proc
	if p == nil || c.closing.Load() {
		return
	}
	// restarts first: the supervisor counts a fault restart before it.
	if n := p.restarts.Load(); n != c.procSeen {
		f := p.faultRestart.Load()
		st.restarts.Add(f - c.procFaultSeen)
		c.procSeen, c.procFaultSeen = n, f
		if restarted != nil {
			restarted()
		}
	}
	c.noteFault(st, errs, p.currentFault())
}

// procDialer dials the server process that serves now, whatever URL the
// client asks for: each process listens on a port of its own.
type procDialer struct {
	p *serverProc
	d net.Dialer
}

func (d *procDialer) Dial(network, _ string) (net.Conn, error) {
	e := d.p.serving.Load()
	if e == nil {
		return nil, errNoServerProcess
	}
	return d.d.Dial(network, e.addr)
}

var errNoServerProcess = errors.New("the event log's server process is starting again")

// clientOptions are the client's options for the server process: its
// address and token are the serving process's at each (re)connect.
func (p *serverProc) clientOptions() []nats.Option {
	opts := []nats.Option{
		nats.SetCustomDialer(&procDialer{p: p, d: net.Dialer{Timeout: nats.DefaultTimeout}}),
		nats.PingInterval(pingInterval), nats.MaxPingsOutstanding(maxPingsOut),
		// A refusal comes from a process that is not the one dialled for;
		// keep reconnecting rather than close the connection for good.
		nats.IgnoreAuthErrorAbort(),
	}
	if !p.fixed {
		opts = append(opts, nats.TokenHandler(func() string {
			if e := p.serving.Load(); e != nil {
				return e.token
			}
			return ""
		}))
	}
	return opts
}
