// Package adminapi is the operators' surface of airouter: the master-key
// admin API that bans and unbans credentials and changes the failover
// settings at runtime (each change is an event on the log, answered once
// the event is applied), the unauthenticated /health JSON and the /vhealth
// dashboard that reads it, the Prometheus /metrics on a registry of its own
// (counters fed by the proxy and by applied events, gauges read from the
// current snapshot at scrape time), and the log lines that ban, unban, bench
// and settings events produce. It takes plain values and functions from the
// wiring and never imports config, the transports or NATS: an admin change
// leaves through Deps.Publish (transport/eventlog's PublishControl in the
// wiring), comes back folded by projections, and reaches Observe from the
// writer's AfterApply. The views of the past (/health?at=, /api/bans?at=,
// /api/timeline) read the log back through the History port the wiring
// sets, and render through the same handlers (PastView). The shape of
// /health and the auto_ai_router_* metric names are those of
// auto_ai_router, so its dashboards, alerts and probes keep working.
package adminapi
