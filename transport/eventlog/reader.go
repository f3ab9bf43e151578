package eventlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/redact"
	"github.com/hashicorp/go-hclog"
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

// readerServerName names a Reader's private server and its connection.
const readerServerName = "airouter-reader"

// Reader reads a log without changing it: it opens the streams that are
// there, never creates or updates one, and has no publisher. Read, Follow
// and Bounds behave as on Log.
type Reader struct {
	log  hclog.Logger
	errs *lastError
	conn *conn
	cons *consumers
	tick *ticker

	closeOnce sync.Once
	closeErr  error
}

// seekTimeout bounds SeqAt's lookup, which finds a message it knows is
// there.
const seekTimeout = 10 * time.Second

// OpenReader opens a log for reading. It fails when the source holds no
// airouter events stream.
func OpenReader(ctx context.Context, o ReaderOptions) (*Reader, error) {
	if (o.StoreDir == "") == (o.NatsURL == "") {
		return nil, errors.New("open the event log for reading: give a store directory or a NATS URL, not both")
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	r := &Reader{log: o.Logger.Named("eventlog"), errs: new(lastError)}
	r.conn = newConn(r.log, r.errs, o.NatsURL)
	if err := r.conn.openReader(ctx, o); err != nil {
		return nil, errors.Join(err, r.conn.teardown())
	}
	// A Reader learns nothing about the stream's leader from publishes,
	// so its stalled consumers are replaced whenever it is connected.
	r.cons = newConsumers(r.conn, r.log, r.errs, r.conn.connected)
	r.conn.onRedial = r.cons.replaceAll
	r.tick = startTicker(checkInterval, r.cons.watch)
	d, err := r.conn.checkDamage(ctx)
	if err == nil {
		err = d.Err()
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open the event log for reading: %w", err), r.Close(context.Background()))
	}
	return r, nil
}

// openReader starts a private server on a copy of the store (or connects
// to the NATS URL) and opens the streams that are there.
func (c *conn) openReader(ctx context.Context, o ReaderOptions) error {
	if !c.external {
		if err := c.startCopy(ctx, o); err != nil {
			return err
		}
	}
	if err := c.connect("airouter "+readerServerName, o.NatsURL, o.CredsFile); err != nil {
		return err
	}
	if err := c.newJetStream(); err != nil {
		return err
	}
	where := o.StoreDir
	if c.external {
		where = redact.URLs(o.NatsURL)
	}
	s := c.cur()
	// A server without JetStream answers nothing either, which the stream
	// lookup would wait out as an election: it is refused at once, as
	// opening the log refuses it.
	if _, err := s.js.AccountInfo(ctx); err != nil {
		return fmt.Errorf("check jetstream is available in %s: %w", where, err)
	}
	var err error
	s.events, s.ckpts, err = c.findStreams(ctx, s.js.Stream, " in "+where)
	return err
}

// startCopy copies the store's jetstream directory into a fresh private
// directory and starts a server without a listener on the copy.
func (c *conn) startCopy(ctx context.Context, o ReaderOptions) error {
	src := filepath.Join(o.StoreDir, "jetstream")
	if _, err := os.Stat(src); err != nil {
		return fmt.Errorf("read the event log in %q: no jetstream directory there (is it an events.store_dir with file storage?): %w", o.StoreDir, err)
	}
	dir, err := os.MkdirTemp(o.TempDir, "airouter-read-")
	if err != nil {
		return fmt.Errorf("make a directory for a copy of the event log: %w", err)
	}
	c.tempDir = dir
	// The mark is read before the copy: everything it counts is in the
	// files by then (the server writes a message before acknowledging it).
	c.priorMark = readMark(o.StoreDir)
	if err := copyStore(src, filepath.Join(dir, "jetstream")); err != nil {
		return fmt.Errorf("copy the event log in %q: %w", o.StoreDir, err)
	}
	s, err := startServer(ctx, Options{
		Storage: StorageFile, MaxBytes: DefaultMaxBytes, ServerName: readerServerName, Logger: o.Logger,
	}, dir)
	if err != nil {
		// The error names the private copy, which is removed: name the store.
		return fmt.Errorf("read the event log in %q: %w", o.StoreDir, err)
	}
	c.srv = s
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
	return r.cons.read(ctx, from, to, fn)
}

// Follow delivers events published from now on, as Log.Follow.
func (r *Reader) Follow(ctx context.Context, subjects []string, fn EventFunc) (stop func(), err error) {
	return r.cons.follow(ctx, subjects, fn)
}

// Bounds reads the events stream's extent.
func (r *Reader) Bounds(ctx context.Context) (Bounds, error) { return r.conn.bounds(ctx) }

// SeqAt returns the sequence of the first event the server stored at or
// after t, or LastSeq+1 when there is none. It is an index lookup, not a
// scan. Store times follow event times closely (an event is stored after it
// happened), so a reader that wants events from time t starts a little
// before it and filters by the events' own times.
func (r *Reader) SeqAt(ctx context.Context, t time.Time) (uint64, error) { return r.conn.seqAt(ctx, t) }

// Checkpoints returns the stored projection checkpoints (at most two),
// oldest first; none when the log has no checkpoints stream.
func (r *Reader) Checkpoints(ctx context.Context) ([]Checkpoint, error) {
	return r.conn.checkpoints(ctx)
}

// Stats returns the reader's counters: undecodable and skipped messages,
// the connection's state and the last error. A Reader publishes nothing, so
// the publishing counters stay zero; Writable mirrors Connected, since
// without publishes a Reader never learns that the stream lacks a leader.
func (r *Reader) Stats() Stats {
	s := Stats{Connected: r.conn.connected(), LastError: r.errs.String()}
	s.Writable = s.Connected
	r.cons.addStats(&s)
	return s
}

// Close stops the reader's consumers, disconnects, and for a store copy
// shuts the private server down and removes the copy. Calling it again
// returns the first result.
func (r *Reader) Close(ctx context.Context) error {
	r.closeOnce.Do(func() {
		r.cons.close()
		r.cons.stopAll()
		r.tick.stop()
		r.cons.restarts.Wait() // no check runs now, so none starts
		r.closeErr = r.conn.close(ctx)
		r.log.Info("event log reader closed")
	})
	return r.closeErr
}
