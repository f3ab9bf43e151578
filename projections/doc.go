// Package projections folds the event log into routing state. Apply is the
// pure, deterministic fold of one domain.Event into a State (failure
// counters, bans, cooldowns, bench windows, runtime settings); "now" is
// always the event's time or a time the caller passes in, never a clock.
// A State is the writer's private working copy: it checkpoints to versioned,
// deterministic bytes and publishes immutable Snapshots, which the routing hot
// path reads through Live (one writer goroutine, lock-free readers,
// read-your-writes by sequence) and which render the JSON views of bans,
// counters and benches.
package projections
