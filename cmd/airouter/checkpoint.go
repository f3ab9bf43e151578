package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/projections"
)

// checkpointStore is what the checkpointer needs from the log.
type checkpointStore interface {
	SaveCheckpoint(ctx context.Context, seq uint64, data []byte) error
}

// checkpointer saves projection checkpoints off the writer goroutine. The
// writer offers the latest one; an older one still waiting is replaced.
type checkpointer struct {
	store  checkpointStore
	logger hclog.Logger
	latest chan checkpoint
	wg     sync.WaitGroup
}

type checkpoint struct {
	seq  uint64
	data []byte
}

func newCheckpointer(store checkpointStore, logger hclog.Logger) *checkpointer {
	return &checkpointer{store: store, logger: logger, latest: make(chan checkpoint, 1)}
}

// offer hands a checkpoint over without blocking the writer.
func (c *checkpointer) offer(seq uint64, data []byte) {
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

func (c *checkpointer) run(ctx context.Context) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case cp := <-c.latest:
				c.save(cp)
			}
		}
	}()
}

func (c *checkpointer) save(cp checkpoint) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.store.SaveCheckpoint(ctx, cp.seq, cp.data); err != nil {
		c.logger.Warn("saving a checkpoint failed", "seq", cp.seq, "error", err)
	}
}

func (c *checkpointer) wait() { c.wg.Wait() }

// saveNow writes a checkpoint of s synchronously (at shutdown, once the
// writer has stopped).
func (c *checkpointer) saveNow(s *projections.State) error {
	if s.Seq() == 0 {
		return nil
	}
	data, err := s.MarshalCheckpoint()
	if err != nil {
		return fmt.Errorf("checkpoint at shutdown: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.store.SaveCheckpoint(ctx, s.Seq(), data); err != nil {
		return fmt.Errorf("checkpoint at shutdown: %w", err)
	}
	return nil
}
