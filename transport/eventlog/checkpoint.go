package eventlog

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// CheckpointSeqHeader carries the events-stream sequence a checkpoint was
// taken at.
const CheckpointSeqHeader = "Airouter-Checkpoint-Seq"

// checkpointOverhead leaves room for the subject and headers in a message.
const checkpointOverhead = 1024

// SaveCheckpoint stores projection state taken after applying events up to
// seq. Only the latest two are kept, with no age limit, so a checkpoint
// carries state (permanent bans) past the events stream's retention. data
// must fit in one NATS message (8 MiB embedded; the cluster's max_payload
// otherwise).
func (l *Log) SaveCheckpoint(ctx context.Context, seq uint64, data []byte) error {
	if limit := l.nc.MaxPayload() - checkpointOverhead; int64(len(data)) > limit {
		return fmt.Errorf("save checkpoint at seq %d: %d bytes exceed the %d-byte message limit", seq, len(data), limit)
	}
	msg := nats.NewMsg(CheckpointsSubject)
	msg.Header.Set(CheckpointSeqHeader, strconv.FormatUint(seq, 10))
	msg.Data = data
	if _, err := l.js.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("save checkpoint at seq %d: %w", seq, err)
	}
	return nil
}

// LoadCheckpoint returns the latest checkpoint; ok is false when there is
// none.
func (l *Log) LoadCheckpoint(ctx context.Context) (seq uint64, data []byte, ok bool, err error) {
	m, err := l.ckpts.GetLastMsgForSubject(ctx, CheckpointsSubject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil, false, nil
	}
	if err != nil {
		return 0, nil, false, fmt.Errorf("load checkpoint: %w", err)
	}
	h := m.Header.Get(CheckpointSeqHeader)
	seq, err = strconv.ParseUint(h, 10, 64)
	if err != nil {
		return 0, nil, false, fmt.Errorf("load checkpoint (stream seq %d): bad %s header %q", m.Sequence, CheckpointSeqHeader, h)
	}
	return seq, m.Data, true, nil
}
