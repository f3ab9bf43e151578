package decisions

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/projections"
)

// saveTimeout bounds one checkpoint write.
const saveTimeout = 10 * time.Second

// CheckpointStore is what the checkpointer needs from the log: a write of
// the projection checkpoint at a stream sequence
// (eventlog.Log.SaveCheckpoint).
type CheckpointStore interface {
	SaveCheckpoint(ctx context.Context, seq uint64, data []byte) error
}

// Checkpointer saves projection checkpoints off the writer goroutine. The
// writer offers the latest one; an older one still waiting is replaced, so
// a slow store costs checkpoints skipped, never a wait. Its life: New,
// Start before the log is followed, Stop (or the end of Start's context)
// and Wait once the writer has stopped, then SaveNow for the final one.
type Checkpointer struct {
	store  CheckpointStore
	logger hclog.Logger
	latest chan checkpoint

	loop loop
}

type checkpoint struct {
	seq  uint64
	data []byte
}

// NewCheckpointer builds a stopped checkpointer over store; a nil logger
// discards its warnings.
func NewCheckpointer(store CheckpointStore, logger hclog.Logger) (*Checkpointer, error) {
	if store == nil {
		return nil, errors.New("decisions: a checkpoint store is required")
	}
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &Checkpointer{store: store, logger: logger, latest: make(chan checkpoint, 1)}, nil
}

// Offer hands the checkpoint of stream sequence seq over without blocking
// the writer, replacing one still waiting. Writer goroutine only.
func (c *Checkpointer) Offer(seq uint64, data []byte) {
	for {
		select {
		case c.latest <- checkpoint{seq, data}:
			return
		default:
		}
		select {
		case <-c.latest: // drop the older one
		default:
		}
	}
}

// Start saves offered checkpoints until ctx ends or Stop is called. A
// second Start does nothing.
func (c *Checkpointer) Start(ctx context.Context) {
	c.loop.start(ctx, nil, 0, func(ctx context.Context, _ <-chan time.Time) {
		for {
			select {
			case <-ctx.Done():
				return
			case cp := <-c.latest:
				c.save(cp)
			}
		}
	})
}

// Stop ends what Start started; a save in progress finishes. A checkpoint
// still waiting is not saved.
func (c *Checkpointer) Stop() { c.loop.stop() }

// Wait returns once the goroutine Start began has returned (at once when
// the checkpointer was never started).
func (c *Checkpointer) Wait() { c.loop.wait() }

// save writes one checkpoint; a failure is logged, and the next offer
// tries again.
func (c *Checkpointer) save(cp checkpoint) {
	ctx, cancel := context.WithTimeout(context.Background(), saveTimeout)
	defer cancel()
	if err := c.store.SaveCheckpoint(ctx, cp.seq, cp.data); err != nil {
		c.logger.Warn("saving a checkpoint failed", "seq", cp.seq, "error", err)
	}
}

// SaveNow writes a checkpoint of s synchronously: at shutdown, once the
// writer has stopped and s is the caller's. A state that holds no event
// writes nothing.
func (c *Checkpointer) SaveNow(s *projections.State) error {
	if s.Seq() == 0 {
		return nil
	}
	data, err := s.MarshalCheckpoint()
	if err != nil {
		return fmt.Errorf("checkpoint at shutdown: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), saveTimeout)
	defer cancel()
	if err := c.store.SaveCheckpoint(ctx, s.Seq(), data); err != nil {
		return fmt.Errorf("checkpoint at shutdown: %w", err)
	}
	return nil
}
