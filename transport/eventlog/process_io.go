package eventlog

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// maxProcessLine bounds one line the server process writes.
const maxProcessLine = 1 << 20

// readStatus reads the process's status lines until it exits: its URL
// once it serves (handed to ready), then its store's health.
func (p *serverProc) readStatus(r io.Reader, ready chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxProcessLine)
	for sc.Scan() {
		line := sc.Text()
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
	if c, ok := r.(io.Closer); ok {
		_ = c.Close()
	}
}

// relayLogs logs the process's lines (hclog JSON) through the router's
// logger at their level; a line that is not JSON (a crash's trace) is
// logged as an error. Error lines are kept for a failed start's message.
func (p *serverProc) relayLogs(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxProcessLine)
	for sc.Scan() {
		level, msg, args := parseLogLine(sc.Bytes())
		if level >= hclog.Error {
			line := msg
			for i := 0; i+1 < len(args); i += 2 {
				line += fmt.Sprintf(" %v=%v", args[i], args[i+1])
			}
			p.lastErr.Store(&line)
		}
		p.nats.Log(level, msg, args...)
	}
	if c, ok := r.(io.Closer); ok {
		_ = c.Close()
	}
}

// parseLogLine splits an hclog JSON line into its level, message and
// the other fields in name order.
func parseLogLine(line []byte) (hclog.Level, string, []any) {
	var fields map[string]any
	if err := json.Unmarshal(line, &fields); err != nil {
		return hclog.Error, string(line), nil
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
	return l, msg, args
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
	if n := p.restarts.Load(); n != c.procSeen {
		st.restarts.Add(p.faultRestart.Load() - c.procFaultSeen)
		c.procSeen, c.procFaultSeen = n, p.faultRestart.Load()
		if restarted != nil {
			restarted()
		}
	}
	cause := p.currentFault()
	if cause == "" {
		if st.clear() {
			c.log.Info("the event log's store writes again; publishing resumes")
		}
		return
	}
	if st.set(cause) {
		c.log.Error("the event log's store cannot write; holding events until it can", "cause", cause)
	}
	errs.set(errors.New(cause))
}
