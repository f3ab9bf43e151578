package eventlog

import "context"

// Checkpoints returns the stored projection checkpoints (at most two),
// oldest first, as Reader.Checkpoints: the router's views of the past fold
// from the latest one stored at or before their moment.
func (l *Log) Checkpoints(ctx context.Context) ([]Checkpoint, error) {
	return l.conn.checkpoints(ctx)
}
