// Package sysmon keeps the Go runtime's monitor thread from its deep sleep
// in the router's process.
//
// The runtime's monitor thread (sysmon) sleeps without a deadline once
// every processor is idle, and the next goroutine to enter a system call
// wakes it, after which it polls every 20 µs until the process is idle
// again. A proxy between a client and an upstream is idle between one
// chunk of a stream and the next, so at a moderate rate every chunk pays
// that wake-up: a futex wake in the request's goroutine, a context switch
// for the monitor and, on one processor, the monitor's polls between the
// request's own system calls. The runtime offers one switch that keeps
// the monitor out of that sleep: GODEBUG schedtrace. With it set, the
// monitor polls on its usual back-off instead (20 µs doubling to 10 ms
// while it finds nothing to do), so a router under load stops paying a
// wake-up per chunk, and an idle one pays 100 wake-ups a second.
//
// schedtrace also prints: a line of the scheduler's state to standard
// error every period, counted on the monotonic clock from the host's boot,
// and the scheduler's state in full (a line per thread and goroutine)
// before the message of a fatal error. The value is the largest the
// runtime takes, 2147483647 ms (about 24.8 days), so the periodic line comes
// once in that time: at start on a host up longer than that (a container
// shares its host's clock), then every 24.8 days. It is plain text, not a
// log line.
//
// The setting is read when a process starts, so the router sets it by
// starting itself again (cmd/airouter). The event log's server process
// does not get it: it is idle between the router's batches, and there the
// setting only adds the monitor's idle wake-ups.
package sysmon

import (
	"strconv"
	"strings"
)

// Setting is the GODEBUG entry that keeps the monitor polling.
const Setting = key + "=2147483647"

const (
	godebug = "GODEBUG"
	key     = "schedtrace"
)

// With returns environ with Setting added to its GODEBUG, and whether it
// added it. It leaves environ as it is when GODEBUG already names
// schedtrace, whatever the value: schedtrace=0 is how an operator keeps
// the runtime's default.
func With(environ []string) ([]string, bool) {
	at, value := lookup(environ)
	if _, named := last(value, key); named {
		return environ, false
	}
	out := append([]string(nil), environ...)
	if at < 0 {
		return append(out, godebug+"="+Setting), true
	}
	if value != "" {
		value += ","
	}
	out[at] = godebug + "=" + value + Setting
	return out, true
}

// Without returns environ with Setting taken out of its GODEBUG (and
// GODEBUG dropped if nothing else is left in it). A schedtrace of another
// value is an operator's and stays.
func Without(environ []string) []string {
	at, value := lookup(environ)
	if at < 0 {
		return environ
	}
	var keep []string
	for _, e := range strings.Split(value, ",") {
		if e != Setting {
			keep = append(keep, e)
		}
	}
	out := append([]string(nil), environ[:at]...)
	if len(keep) > 0 {
		out = append(out, godebug+"="+strings.Join(keep, ","))
	}
	return append(out, environ[at+1:]...)
}

// Steady reports whether a process with this GODEBUG keeps the monitor
// polling, as the runtime reads it at start: the last schedtrace entry
// wins, and it must be a number of ms above 0 that fits an int32.
func Steady(godebugValue string) bool {
	v, ok := last(godebugValue, key)
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	return err == nil && n > 0
}

// Ours reports whether that GODEBUG's schedtrace is Setting's, not an
// operator's own.
func Ours(godebugValue string) bool {
	v, ok := last(godebugValue, key)
	return ok && key+"="+v == Setting
}

// lookup finds the first GODEBUG in environ (the one the runtime reads)
// and its value; at is -1 without one.
func lookup(environ []string) (at int, value string) {
	for i, kv := range environ {
		if v, ok := strings.CutPrefix(kv, godebug+"="); ok {
			return i, v
		}
	}
	return -1, ""
}

// last is the value of name's last entry in a GODEBUG value, the one the
// runtime applies: an entry is name=value, matched exactly; one without
// '=' is skipped, as the runtime skips it.
func last(godebugValue, name string) (value string, ok bool) {
	for _, e := range strings.Split(godebugValue, ",") {
		if k, v, found := strings.Cut(e, "="); found && k == name {
			value, ok = v, true
		}
	}
	return value, ok
}
