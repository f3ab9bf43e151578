// Package adminapi is the operators' surface of airouter: the master-key
// admin API that bans and unbans credentials and changes the failover
// settings at runtime (each change is an event on the log, answered once
// the event is applied), the unauthenticated /health JSON and the /vhealth
// dashboard that reads it, the Prometheus /metrics on a registry of its own
// (counters fed by the proxy and by applied events, gauges read from the
// current snapshot at scrape time), and the log lines that ban, unban, bench
// and settings events produce. It takes plain values and functions from the
// wiring and never imports config or the transports.
package adminapi
