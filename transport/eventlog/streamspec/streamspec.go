// Package streamspec holds the rules for the event stream's storage that the
// config file and the event log both check: the storage kinds and the range
// of the replication factor. It imports nothing, so config can check
// events.storage and events.replicas by the same rules the log applies
// without depending on the log or on NATS.
package streamspec

// Storage kinds of the event stream (events.storage, eventlog.Options.Storage).
// File storage survives a restart of the server; memory storage is lost with
// it.
const (
	StorageFile   = "file"
	StorageMemory = "memory"
)

// DefaultStorage is the storage kind used when none is given.
const DefaultStorage = StorageFile

// DefaultMaxBytes is the events stream's size limit when none is given
// (events.max_bytes, eventlog.Options.MaxBytes): 1 GiB, oldest events
// discarded first.
const DefaultMaxBytes = 1 << 30

// StorageKinds returns every storage kind, the default first.
func StorageKinds() []string { return []string{StorageFile, StorageMemory} }

// ValidStorage reports whether s is a storage kind.
func ValidStorage(s string) bool { return s == StorageFile || s == StorageMemory }

// The range of the streams' replication factor (events.replicas,
// eventlog.Options.Replicas): JetStream keeps at most five copies of a
// stream. More than one needs an external cluster; the embedded server
// always keeps one.
const (
	MinReplicas = 1
	MaxReplicas = 5
)

// ValidReplicas reports whether n is an allowed replication factor.
func ValidReplicas(n int) bool { return n >= MinReplicas && n <= MaxReplicas }
