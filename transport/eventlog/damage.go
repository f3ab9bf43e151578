package eventlog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go/jetstream"
)

// Damage is what the events stream lost: sequences it assigned (or that a
// checkpoint or the store's mark shows were acknowledged) whose messages it
// no longer holds. airouter never deletes events itself and retention only
// drops the oldest, so a gap inside the stream, a sequence the server
// reports lost, or a last sequence below what was acknowledged is damage
// (a truncated or corrupt block, lost writes after a power loss).
type Damage struct {
	// Missing counts the missing stream messages (a batch message carries
	// several outcomes); 0 means no damage was found.
	Missing uint64
	// FromSeq is the first missing sequence.
	FromSeq uint64
	// LastStored is the last sequence the stream still holds: what a
	// reader can wait for.
	LastStored uint64
	// Cause says how the loss was found.
	Cause string
	// Acknowledged is the highest sequence known acknowledged (the
	// store's mark, the latest checkpoint's record), 0 when unknown.
	Acknowledged uint64
	// assigned is the stream's last assigned sequence.
	assigned uint64
}

// Err is nil without damage, else an error naming it.
func (d Damage) Err() error {
	if d.Missing == 0 {
		return nil
	}
	return fmt.Errorf("the event log lost %d events from sequence %d (%s)", d.Missing, d.FromSeq, d.Cause)
}

// markName is the file in events.store_dir that holds the highest
// acknowledged sequence of the events stream, outside the stream's own
// files, so a truncated block is found after a crash too.
const markName = "airouter.seq"

// seqMark keeps the highest acknowledged events-stream sequence in
// <store_dir>/airouter.seq: noted on every acknowledgement, written after a
// control publish and once a second otherwise. A nil seqMark (external
// cluster, memory storage) does nothing.
type seqMark struct {
	mu      sync.Mutex
	f       *os.File
	seen    atomic.Uint64
	written uint64
}

// openMark opens the mark file in dir for writing, starting from prior.
func openMark(dir string, prior uint64) (*seqMark, error) {
	f, err := os.OpenFile(filepath.Join(dir, markName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the sequence mark in %q: %w", dir, err)
	}
	m := &seqMark{f: f, written: prior}
	m.seen.Store(prior)
	return m, nil
}

// readMark returns the sequence stored in dir's mark file, 0 when there is
// none or it is unreadable.
func readMark(dir string) uint64 {
	b, err := os.ReadFile(filepath.Join(dir, markName))
	if err != nil {
		return 0
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// note records an acknowledged sequence.
func (m *seqMark) note(seq uint64) {
	if m == nil {
		return
	}
	for {
		cur := m.seen.Load()
		if seq <= cur || m.seen.CompareAndSwap(cur, seq) {
			return
		}
	}
}

// write stores the highest noted sequence when it changed. The file is
// written in place with a fixed width, so a crash leaves the old or the
// new number.
func (m *seqMark) write() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	seq := m.seen.Load()
	if m.f == nil || seq == m.written {
		return
	}
	if _, err := m.f.WriteAt([]byte(fmt.Sprintf("%020d\n", seq)), 0); err == nil {
		m.written = seq
	}
}

// close writes the last noted sequence and closes the file.
func (m *seqMark) close() error {
	if m == nil {
		return nil
	}
	m.write()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.f == nil {
		return nil
	}
	err := m.f.Close()
	m.f = nil
	return err
}

// damage compares the events stream's state after recovery with expect,
// the highest sequence known to have been acknowledged (the mark, the
// latest checkpoint).
func (c *conn) damage(ctx context.Context, expect uint64) (Damage, error) {
	info, err := c.cur().events.Info(ctx, jetstream.WithDeletedDetails(true))
	if err != nil {
		return Damage{}, fmt.Errorf("read %s state: %w", EventsStream, err)
	}
	return damageOf(info.State, expect), nil
}

// damageOf is damage on a stream state.
func damageOf(st jetstream.StreamState, expect uint64) Damage {
	missing := map[uint64]struct{}{}
	var causes []string
	// A sequence counts once it lies inside the stream (an empty stream
	// reports sequence 0 deleted).
	add := func(seqs []uint64, what string) {
		n := 0
		for _, s := range seqs {
			if s > 0 && s >= st.FirstSeq && s <= st.LastSeq {
				missing[s] = struct{}{}
				n++
			}
		}
		if n > 0 {
			causes = append(causes, fmt.Sprintf(what, n))
		}
	}
	add(st.Deleted, "%d sequences inside the stream hold no message")
	if st.Lost != nil {
		add(st.Lost.Msgs, "the server reports %d messages lost")
	}
	d := Damage{LastStored: st.LastSeq, Acknowledged: expect, assigned: st.LastSeq}
	for d.LastStored > 0 && d.LastStored >= st.FirstSeq {
		if _, gone := missing[d.LastStored]; !gone {
			break
		}
		d.LastStored--
	}
	if st.Msgs == 0 {
		d.LastStored = 0
	}
	tail := uint64(0)
	if expect > st.LastSeq {
		tail = expect - st.LastSeq
		causes = append(causes, fmt.Sprintf("the stream ends at sequence %d, %d was acknowledged", st.LastSeq, expect))
	}
	d.Missing = uint64(len(missing)) + tail
	if d.Missing == 0 {
		return d
	}
	seqs := make([]uint64, 0, len(missing))
	for s := range missing {
		seqs = append(seqs, s)
	}
	if tail > 0 {
		seqs = append(seqs, st.LastSeq+1)
	}
	d.FromSeq = slices.Min(seqs)
	d.Cause = strings.Join(causes, "; ")
	return d
}

// last is the highest noted sequence, 0 for a nil mark.
func (m *seqMark) last() uint64 {
	if m == nil {
		return 0
	}
	return m.seen.Load()
}

// acknowledged is the highest events-stream sequence known acknowledged
// now: the mark's, or without one the stream's last; 0 when unknown.
func (c *conn) acknowledged(ctx context.Context) uint64 {
	if c.mark != nil {
		return c.mark.last()
	}
	if c.cur().events == nil {
		return 0
	}
	last, err := c.lastSeq(ctx)
	if err != nil {
		return 0
	}
	return last
}

// checkDamage is damage against the highest sequence known acknowledged:
// the store's mark as it was at open, and the one the latest checkpoint
// recorded when it was saved (CheckpointLastHeader).
func (c *conn) checkDamage(ctx context.Context) (Damage, error) {
	expect := c.priorMark
	if c.cur().ckpts != nil {
		m, err := c.lastCheckpointMsg(ctx)
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
		case err != nil:
			return Damage{}, fmt.Errorf("load checkpoint: %w", err)
		default:
			if n, err := strconv.ParseUint(m.Header.Get(CheckpointLastHeader), 10, 64); err == nil {
				expect = max(expect, n)
			}
		}
	}
	return c.damage(ctx, expect)
}

// Damage checks the events stream for lost events against the highest
// sequence known acknowledged: the store's mark (embedded file storage)
// and the latest checkpoint. Call it after Open, before following the log.
// A missing tail is then no stall to the consumers' check: a consumer that
// passed LastStored has caught up until a new event is stored.
func (l *Log) Damage(ctx context.Context) (Damage, error) {
	d, err := l.conn.checkDamage(ctx)
	if err != nil {
		return Damage{}, err
	}
	if d.assigned > d.LastStored {
		l.cons.tailHole.Store(&[2]uint64{d.LastStored, d.assigned})
	}
	return d, nil
}

// caughtUp reports whether position has passed last, counting a missing
// tail (Log.Damage) as passed.
func (cs *consumers) caughtUp(position, last uint64) bool {
	if position >= last {
		return true
	}
	h := cs.tailHole.Load()
	return h != nil && last == h[1] && position >= h[0]
}
