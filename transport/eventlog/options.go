package eventlog

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/transport/eventlog/streamspec"
)

// Storage kinds for Options.Storage; streamspec holds the rules config
// checks events.storage by.
const (
	StorageFile   = streamspec.StorageFile
	StorageMemory = streamspec.StorageMemory
)

// Defaults used when an Options field is zero.
const (
	DefaultQueueSize  = 65536
	DefaultMaxBytes   = streamspec.DefaultMaxBytes
	DefaultServerName = "airouter"
)

// DuplicateWindow is the events stream's Nats-Msg-Id deduplication window.
// It must cover PublishControl's retries (a few seconds at most) and two
// replicas deciding the same ban from the same outcome (they fold the same
// stream, typically milliseconds apart). It is kept small because the server
// re-reads every message stored within the window when it restarts, so
// start-up after a busy period grows with the window. A decision whose
// triggering event is older than the window must not be published (replay
// has no side effects), or it would not be deduplicated.
const DuplicateWindow = 10 * time.Second

// maxPayload is the embedded server's message size limit; it bounds a
// checkpoint.
const maxPayload = 8 << 20

// Options configure Open. cmd fills them from config; zero values get the
// documented defaults.
type Options struct {
	// StoreDir is the embedded server's data directory (file storage). It is
	// locked against a second airouter. With memory storage a fresh
	// directory is made inside it (or inside the system temp dir when
	// empty) and removed on Close.
	StoreDir string
	// Storage is StorageFile (default) or StorageMemory.
	Storage string
	// NatsURL, when set, connects to an external NATS cluster instead of
	// embedding a server: comma-separated URLs; user:password@, a token@ and
	// tls:// go in the URL.
	NatsURL string
	// CredsFile is an optional NATS credentials file for NatsURL.
	CredsFile string
	// Listen, when set ("127.0.0.1:4222", port 0 for a random one), makes
	// the embedded server also accept NATS clients there (no auth: bind it
	// to loopback). Empty means for this process alone (in-process, or a
	// server process on a loopback port of its own, with a token).
	Listen string
	// MaxAge bounds the events stream by age; 0 keeps events until
	// MaxBytes pushes them out.
	MaxAge time.Duration
	// MaxBytes bounds the events stream's size (default 1 GiB; -1 means
	// unlimited, up to the server's storage limit); the oldest
	// events are discarded first.
	MaxBytes int64
	// Replicas is the streams' replication factor in external mode,
	// streamspec.MinReplicas to streamspec.MaxReplicas (default 1). The
	// embedded server always uses 1.
	Replicas int
	// QueueSize bounds Publish's queue (default 65536 events).
	QueueSize int
	// Logger receives the log's and the embedded server's messages.
	Logger hclog.Logger
	// ServerName names the embedded server in logs (default "airouter").
	ServerName string
	// Clock times the publisher's rounds and the server process's
	// watch, restarts and stop (default the real clock; with a fake one
	// they wait for it to advance).
	Clock clockwork.Clock
	// Process, when set, runs the embedded server of a file store in a
	// child process (process.go) instead of in this one; nil keeps it
	// in-process. Memory storage and an external NatsURL ignore it.
	Process *Process

	// authToken is the token the embedded server asks its clients for:
	// set in the child process, empty in-process.
	authToken string
}

func (o Options) withDefaults() (Options, error) {
	switch {
	case o.Storage == "":
		o.Storage = streamspec.DefaultStorage
	case !streamspec.ValidStorage(o.Storage):
		return o, fmt.Errorf("events.storage %q: want one of %s", o.Storage, strings.Join(streamspec.StorageKinds(), ", "))
	}
	if o.NatsURL == "" && o.Storage == StorageFile && o.StoreDir == "" {
		return o, fmt.Errorf("events.store_dir is required with file storage")
	}
	if o.MaxAge < 0 {
		return o, fmt.Errorf("events.max_age %s is negative", o.MaxAge)
	}
	if o.MaxBytes < -1 {
		return o, fmt.Errorf("events.max_bytes %d: want -1 (unlimited) or a size", o.MaxBytes)
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Replicas != 0 && !streamspec.ValidReplicas(o.Replicas) {
		return o, fmt.Errorf("events.replicas %d: want %d to %d", o.Replicas, streamspec.MinReplicas, streamspec.MaxReplicas)
	}
	if o.Replicas == 0 || o.NatsURL == "" {
		o.Replicas = 1
	}
	if o.QueueSize < 0 {
		return o, fmt.Errorf("events.queue_size %d is negative", o.QueueSize)
	}
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	if o.QueueSize == 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.ServerName == "" {
		o.ServerName = DefaultServerName
	}
	if o.Listen != "" && o.NatsURL == "" {
		if _, _, err := splitListen(o.Listen); err != nil {
			return o, err
		}
	}
	return o, nil
}

// splitListen parses "host:port"; port 0 asks for a random port.
func splitListen(listen string) (string, int, error) {
	host, p, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, fmt.Errorf("events.listen %q: %w", listen, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("events.listen %q: bad port", listen)
	}
	if port == 0 {
		port = -1 // the server's RANDOM_PORT
	}
	return host, port, nil
}
