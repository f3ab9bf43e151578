// Package projections folds the event log into routing state. Apply is the
// pure, deterministic fold of one domain.Event into a State (failure
// counters, bans, cooldowns, bench windows, runtime settings); "now" is
// always the event's time or a time the caller passes in, never a clock.
// ApplyReport is the same fold that also reports what the event changed in
// the ban table (a Change), so metrics and log lines follow the fold's own
// rules. A State is the writer's private working copy: it checkpoints to
// versioned, deterministic bytes (the same bytes from the snapshot it just
// published, State.CheckpointOf, so any goroutine can marshal them) and
// publishes immutable Snapshots, which
// the routing hot path reads through Live (one writer goroutine, lock-free
// readers, read-your-writes by sequence). A Snapshot answers queries (bans,
// pairs, benches; queries.go) and renders the whole state at a moment as
// one StateView (stateview.go).
// It imports only domain: no clock, no config, no I/O. Events reach it
// decoded, in log order, from transport/eventlog's consumer (Live.Apply);
// from the fold an outcome goes on to decisions (Live.AfterApply, with its
// Facts) and the snapshot to transport/proxy's Gate and to adminapi.
package projections
