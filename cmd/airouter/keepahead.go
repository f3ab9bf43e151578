package main

import (
	"context"

	"github.com/airouter/airouter/projections"
)

// keepAhead handles a checkpoint at seq above the events stream's last
// sequence last, found because the router's own store lost the stream's
// tail (a corrupt block rebuilt to a lower last sequence). The checkpoint
// then holds more than the stream: every event the stream still stores
// (all at or below last) and those it lost up to seq. keepAhead keeps the
// checkpoint's state and moves the stream past the highest sequence known
// acknowledged, so new events never take a sequence the checkpoint folded
// (the fold would skip them) or one an acknowledged event had. The events
// the stream still stored are removed by the move: the checkpoint holds
// their effect, replay and export no longer show them.
//
// It returns nil, leaving the caller to start from the surviving events,
// when the stream is not the router's own store (an external cluster's
// stream may have been recreated and hold other replicas' events), no loss
// was found, or the checkpoint or the move fails.
func (rt *router) keepAhead(ctx context.Context, seq uint64, data []byte, last uint64) *projections.State {
	d := rt.damage
	if d.Missing == 0 || !rt.cfg.Events.Embedded() || rt.cfg.Events.Storage != "file" {
		return nil
	}
	st, err := projections.UnmarshalCheckpoint(data)
	if err != nil {
		rt.logger.Warn("checkpoint unreadable; starting from the events the log still holds", "error", err)
		return nil
	}
	next := max(seq, d.Acknowledged)
	removed, err := rt.log.MovePast(ctx, next)
	if err != nil {
		rt.logger.Error("cannot move the damaged event log past the checkpoint; starting from the events it still holds",
			"checkpoint_seq", seq, "error", err)
		return nil
	}
	lostAfter := next - seq // acknowledged after the checkpoint: gone with the stream's tail
	rt.logger.Error("kept the checkpoint, which holds more than the damaged event log: "+
		"its whole state at checkpoint_seq stays (bans, counters, cooldowns, benches, settings); "+
		"the events acknowledged after it are lost; the events the log still stored are folded into it "+
		"and were removed; new events continue from next_seq",
		"checkpoint_seq", seq, "lost_after_checkpoint", lostAfter, "removed_events", removed,
		"removed_up_to_seq", last, "next_seq", next+1)
	return st
}
