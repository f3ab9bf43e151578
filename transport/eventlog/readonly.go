package eventlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go/jetstream"
)

// ReaderOptions say where a Reader finds a log. Exactly one of StoreDir and
// NatsURL is set.
type ReaderOptions struct {
	// StoreDir is a router's events.store_dir. Its jetstream directory is
	// copied into a fresh directory under TempDir, and a private embedded
	// server (no listener) recovers the copy as it would after a crash. The
	// original is only read, never locked or written, so a router may be
	// running on it. The copy is removed on Close.
	StoreDir string
	// NatsURL connects to a NATS server that holds the streams: an
	// external cluster, or a running router's events.listen.
	NatsURL string
	// CredsFile is an optional NATS credentials file for NatsURL.
	CredsFile string
	// TempDir is where the copy of StoreDir is made; "" is the system's
	// temporary directory.
	TempDir string
	// Logger receives the reader's and the private server's messages.
	Logger hclog.Logger
}

// Reader reads a log without changing it: it never creates or updates a
// stream and has no way to publish. Read, Follow and Bounds behave as on
// Log.
type Reader struct {
	l *Log
}

// seekTimeout bounds SeqAt's lookup, which finds a message it knows is
// there.
const seekTimeout = 10 * time.Second

// Checkpoint is one stored projection checkpoint.
type Checkpoint struct {
	// Seq is the events-stream sequence the state was taken at.
	Seq  uint64
	Data []byte
	// Stored is when the checkpoint was stored: by then the writer had
	// applied every event up to Seq.
	Stored time.Time
}

// Bounds are the events stream's extent.
type Bounds struct {
	// FirstSeq and LastSeq are 0 when the stream is empty. A FirstSeq
	// above 1 means older events were discarded by the stream's limits.
	FirstSeq, LastSeq uint64
	// FirstStored and LastStored are the server's store times of the
	// first and last events.
	FirstStored, LastStored time.Time
}

// OpenReader opens a log for reading. It fails when the source holds no
// airouter events stream.
func OpenReader(ctx context.Context, o ReaderOptions) (*Reader, error) {
	if (o.StoreDir == "") == (o.NatsURL == "") {
		return nil, errors.New("open the event log for reading: give a store directory or a NATS URL, not both")
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	// A Reader has no Publish and runs no publisher: its queue is never
	// fed, and Close finds the publisher done.
	l := newLog(Options{
		NatsURL: o.NatsURL, CredsFile: o.CredsFile, Storage: StorageFile,
		MaxBytes: DefaultMaxBytes, QueueSize: 1, Logger: o.Logger,
		ServerName: "airouter-reader", noPublisher: true,
	})
	close(l.pubDone)
	if err := l.openReader(ctx, o); err != nil {
		return nil, errors.Join(err, l.teardown())
	}
	go l.reportLoop()
	return &Reader{l: l}, nil
}

func (l *Log) openReader(ctx context.Context, o ReaderOptions) error {
	if !l.external {
		src := filepath.Join(o.StoreDir, "jetstream")
		if _, err := os.Stat(src); err != nil {
			return fmt.Errorf("read the event log in %q: no jetstream directory there (is it an events.store_dir with file storage?): %w", o.StoreDir, err)
		}
		dir, err := os.MkdirTemp(o.TempDir, "airouter-read-")
		if err != nil {
			return fmt.Errorf("make a directory for a copy of the event log: %w", err)
		}
		l.tempDir = dir
		if err := copyStore(src, filepath.Join(dir, "jetstream")); err != nil {
			return fmt.Errorf("copy the event log in %q: %w", o.StoreDir, err)
		}
		s, err := startServer(ctx, l.opts, dir)
		if err != nil {
			return err
		}
		l.srv = s
	}
	if err := l.connect(); err != nil {
		return err
	}
	js, err := jetstream.New(l.nc)
	if err != nil {
		return fmt.Errorf("create jetstream context: %w", err)
	}
	l.js = js
	where := o.StoreDir
	if l.external {
		where = RedactURLs(o.NatsURL)
	}
	if l.events, err = js.Stream(ctx, EventsStream); err != nil {
		return fmt.Errorf("open stream %s in %s: %w", EventsStream, where, err)
	}
	l.ckpts, err = js.Stream(ctx, CheckpointsStream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		l.ckpts, err = nil, nil
	}
	if err != nil {
		return fmt.Errorf("open stream %s in %s: %w", CheckpointsStream, where, err)
	}
	return nil
}

// copyStore copies the server's directory tree. Files that vanish while it
// runs (a block the live server removed) are skipped; a file the live
// server is appending to is copied as far as it was written, which the
// private server recovers from like from a crash.
func copyStore(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path != src {
				return nil
			}
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o750)
		case !d.Type().IsRegular():
			return nil
		}
		return copyFile(path, target)
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return out.Close()
}

// Read delivers the stored events from sequence from to to, as Log.Read.
func (r *Reader) Read(ctx context.Context, from, to uint64, fn func(ev domain.Event, pending uint64) error) error {
	return r.l.Read(ctx, from, to, fn)
}

// Follow delivers events published from now on, as Log.Follow.
func (r *Reader) Follow(ctx context.Context, subjects []string, fn EventFunc) (stop func(), err error) {
	return r.l.Follow(ctx, subjects, fn)
}

// Bounds reads the events stream's extent.
func (r *Reader) Bounds(ctx context.Context) (Bounds, error) { return r.l.Bounds(ctx) }

// SeqAt returns the sequence of the first event the server stored at or
// after t, or LastSeq+1 when there is none. It is an index lookup, not a
// scan. Store times follow event times closely (an event is stored after it
// happened), so a reader that wants events from time t starts a little
// before it and filters by the events' own times.
func (r *Reader) SeqAt(ctx context.Context, t time.Time) (uint64, error) {
	b, err := r.Bounds(ctx)
	if err != nil {
		return 0, err
	}
	switch {
	case b.LastSeq == 0:
		return 1, nil
	case !t.After(b.FirstStored):
		return b.FirstSeq, nil
	case t.After(b.LastStored):
		return b.LastSeq + 1, nil
	}
	ctx, cancel := context.WithTimeout(ctx, seekTimeout)
	defer cancel()
	oc, err := r.l.js.OrderedConsumer(ctx, EventsStream, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartTimePolicy,
		OptStartTime:  &t,
	})
	if err != nil {
		return 0, fmt.Errorf("find the first event stored at %s: %w", t.UTC().Format(time.RFC3339), err)
	}
	msg, err := oc.Next(jetstream.FetchContext(ctx))
	if err != nil {
		return 0, fmt.Errorf("find the first event stored at %s: %w", t.UTC().Format(time.RFC3339), err)
	}
	md, err := msg.Metadata()
	if err != nil {
		return 0, fmt.Errorf("find the first event stored at %s: %w", t.UTC().Format(time.RFC3339), err)
	}
	return md.Sequence.Stream, nil
}

// Checkpoints returns the stored projection checkpoints (at most two),
// oldest first; none when the log has no checkpoints stream.
func (r *Reader) Checkpoints(ctx context.Context) ([]Checkpoint, error) {
	if r.l.ckpts == nil {
		return nil, nil
	}
	info, err := r.l.ckpts.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("read %s state: %w", CheckpointsStream, err)
	}
	st := info.State
	var out []Checkpoint
	for seq := st.FirstSeq; st.Msgs > 0 && seq <= st.LastSeq; seq++ {
		m, err := r.l.ckpts.GetMsg(ctx, seq)
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

// Stats returns the reader's counters (undecodable and skipped messages).
func (r *Reader) Stats() Stats { return r.l.Stats() }

// Close stops the reader's consumers, disconnects, and for a store copy
// shuts the private server down and removes the copy.
func (r *Reader) Close(ctx context.Context) error { return r.l.Close(ctx) }
