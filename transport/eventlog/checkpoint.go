package eventlog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// CheckpointSeqHeader carries the events-stream sequence a checkpoint was
// taken at.
const CheckpointSeqHeader = "Airouter-Checkpoint-Seq"

// CheckpointLastHeader carries the highest events-stream sequence
// acknowledged when a checkpoint was saved: a stream that ends below it
// after a restart lost events (damage.go).
const CheckpointLastHeader = "Airouter-Checkpoint-Last-Seq"

// checkpointOverhead leaves room for the subject and headers in a message.
const checkpointOverhead = 1024

// Checkpoint is one stored projection checkpoint.
type Checkpoint struct {
	// Seq is the events-stream sequence the state was taken at.
	Seq  uint64
	Data []byte
	// Stored is when the checkpoint was stored: by then the writer had
	// applied every event up to Seq.
	Stored time.Time
}

// saveCheckpoint stores data as the checkpoint at seq (Log.SaveCheckpoint).
func (c *conn) saveCheckpoint(ctx context.Context, seq uint64, data []byte) error {
	if limit := c.cur().nc.MaxPayload() - checkpointOverhead; int64(len(data)) > limit {
		return fmt.Errorf("save checkpoint at seq %d: %d bytes exceed the %d-byte message limit", seq, len(data), limit)
	}
	msg := nats.NewMsg(CheckpointsSubject)
	msg.Header.Set(CheckpointSeqHeader, strconv.FormatUint(seq, 10))
	if last := c.acknowledged(ctx); last > 0 {
		msg.Header.Set(CheckpointLastHeader, strconv.FormatUint(last, 10))
	}
	msg.Data = data
	if _, err := c.cur().js.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("save checkpoint at seq %d: %w", seq, err)
	}
	return nil
}

// loadCheckpoint returns the latest checkpoint (Log.LoadCheckpoint).
func (c *conn) loadCheckpoint(ctx context.Context) (seq uint64, data []byte, ok bool, err error) {
	m, err := c.lastCheckpointMsg(ctx)
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

// lastCheckpointMsg reads the latest checkpoint message, retried while the
// checkpoints stream elects its leader (leader.go): a replica starting
// beside the one that created the stream reads it first.
func (c *conn) lastCheckpointMsg(ctx context.Context) (*jetstream.RawStreamMsg, error) {
	var m *jetstream.RawStreamMsg
	err := c.whileElecting(ctx, "read the latest checkpoint", func(ctx context.Context) error {
		var err error
		m, err = c.cur().ckpts.GetLastMsgForSubject(ctx, CheckpointsSubject)
		return err
	})
	return m, err
}

// checkpoints returns every stored checkpoint, oldest first
// (Reader.Checkpoints); none when there is no checkpoints stream.
func (c *conn) checkpoints(ctx context.Context) ([]Checkpoint, error) {
	if c.cur().ckpts == nil {
		return nil, nil
	}
	info, err := c.cur().ckpts.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("read %s state: %w", CheckpointsStream, err)
	}
	st := info.State
	var out []Checkpoint
	for seq := st.FirstSeq; st.Msgs > 0 && seq <= st.LastSeq; seq++ {
		m, err := c.cur().ckpts.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read checkpoint at %s sequence %d: %w", CheckpointsStream, seq, err)
		}
		var at uint64
		if _, err := fmt.Sscan(m.Header.Get(CheckpointSeqHeader), &at); err != nil {
			continue // not a checkpoint this version wrote
		}
		out = append(out, Checkpoint{Seq: at, Data: m.Data, Stored: m.Time.UTC()})
	}
	return out, nil
}
