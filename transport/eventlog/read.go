package eventlog

import (
	"context"
	"fmt"
	"sync"

	"github.com/airouter/airouter/domain"
)

// read delivers the stored events from sequence from to to and returns
// when it is done (Log.Read, Reader.Read).
func (cs *consumers) read(ctx context.Context, from, to uint64, fn func(ev domain.Event, pending uint64) error) error {
	info, err := cs.conn.cur().events.Info(ctx)
	if err != nil {
		return fmt.Errorf("read %s state: %w", EventsStream, err)
	}
	st := info.State
	if to == 0 || to > st.LastSeq {
		to = st.LastSeq
	}
	if st.Msgs == 0 || from > to || to < st.FirstSeq {
		return nil
	}
	done := make(chan struct{})
	var ferr error
	var once sync.Once
	finish := func() { once.Do(func() { close(done) }) }
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop, err := cs.consumeFrom(rctx, from, false, func(ev domain.Event, pending uint64) {
		if ev.Seq > to {
			finish()
			return
		}
		select {
		case <-done:
			return
		default:
		}
		if err := fn(ev, pending); err != nil {
			ferr = err
			finish()
			return
		}
		// The last event of message to is not known as such (a batch
		// may follow it in the same message); the next message's first
		// event, or the end of the stream, ends the read.
		if pending == 0 {
			finish()
		}
	})
	if err != nil {
		return err
	}
	defer stop()
	select {
	case <-done:
		return ferr
	case <-ctx.Done():
		return fmt.Errorf("read events %d..%d: %w", from, to, ctx.Err())
	}
}
