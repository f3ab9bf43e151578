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

// Checkpointer marshals and saves projection checkpoints off the writer
// goroutine. The writer offers the checkpoint of the latest snapshot it
// published (immutable, so handing it over costs the writer next to
// nothing, projections.State.CheckpointOf); an older one still waiting is
// replaced, so a slow marshal or store costs checkpoints skipped, never a
// wait. Its life: New,
// Start before the log is followed, Stop (or the end of Start's context)
// and Wait once the writer has stopped, then SaveNow for the final one.
type Checkpointer struct {
	store  CheckpointStore
	logger hclog.Logger
	latest chan *projections.Checkpoint

	loop loop
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
	return &Checkpointer{store: store, logger: logger, latest: make(chan *projections.Checkpoint, 1)}, nil
}

// Offer hands a checkpoint over to be marshalled and saved without
// blocking the writer, replacing one still waiting. Writer goroutine only.
func (c *Checkpointer) Offer(cp *projections.Checkpoint) {
	for {
		select {
		case c.latest <- cp:
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

// save marshals the checkpoint and writes it at its stream sequence; a
// failure is logged, and the next offer tries again.
func (c *Checkpointer) save(cp *projections.Checkpoint) {
	data, err := cp.MarshalCheckpoint()
	if err != nil {
		c.logger.Error("checkpoint marshal failed", "seq", cp.Seq(), "error", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), saveTimeout)
	defer cancel()
	if err := c.store.SaveCheckpoint(ctx, cp.Seq(), data); err != nil {
		c.logger.Warn("saving a checkpoint failed", "seq", cp.Seq(), "error", err)
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
