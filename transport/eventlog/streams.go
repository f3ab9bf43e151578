package eventlog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// checkpointMaxBytes bounds the checkpoints stream: two checkpoints of at
// most maxPayload each fit.
const checkpointMaxBytes = 4 * maxPayload

func storageType(s string) jetstream.StorageType {
	if s == StorageMemory {
		return jetstream.MemoryStorage
	}
	return jetstream.FileStorage
}

func eventsConfig(o Options) jetstream.StreamConfig {
	dupes := DuplicateWindow
	if o.MaxAge > 0 && o.MaxAge < dupes {
		// The server refuses a window longer than the events' life;
		// nothing older than MaxAge is left to be a duplicate of.
		dupes = o.MaxAge
	}
	return jetstream.StreamConfig{
		Name:        EventsStream,
		Description: "airouter events: outcomes, bans, unbans, cooldowns, benches, settings",
		Subjects:    []string{EventsSubjects},
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		MaxAge:      o.MaxAge,
		MaxBytes:    o.MaxBytes,
		MaxMsgs:     -1,
		Duplicates:  dupes,
		Replicas:    o.Replicas,
		Storage:     storageType(o.Storage),
	}
}

func checkpointsConfig(o Options) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:              CheckpointsStream,
		Description:       "airouter projection checkpoints (latest two)",
		Subjects:          []string{CheckpointsSubject},
		Retention:         jetstream.LimitsPolicy,
		Discard:           jetstream.DiscardOld,
		MaxMsgsPerSubject: 2,
		MaxMsgs:           -1,
		MaxBytes:          checkpointMaxBytes,
		Duplicates:        DuplicateWindow,
		Replicas:          o.Replicas,
		Storage:           storageType(o.Storage),
	}
}

// ensureStream creates the stream, or reconciles an existing one. With an
// embedded server this process is the only writer, so it updates the limits
// to what config says. On an external cluster several airouter versions may
// share the stream; updating from each would flip-flop it, so a difference
// is only logged and the stream's own settings win (change them with the
// nats CLI). Fields that cannot change (storage, retention) only warn.
func (c *conn) ensureStream(ctx context.Context, want jetstream.StreamConfig) (jetstream.Stream, error) {
	// Look first: the server checks a create's limits against its reserved
	// storage before noticing the stream exists, so re-creating an
	// existing stream can fail with "insufficient storage resources".
	st, err := c.cur().js.Stream(ctx, want.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		st, err = c.cur().js.CreateStream(ctx, want)
		if err == nil {
			return st, nil
		}
		if !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return nil, fmt.Errorf("create stream %s: %w", want.Name, err)
		}
		st, err = c.cur().js.Stream(ctx, want.Name) // another replica created it
	}
	if err != nil {
		return nil, fmt.Errorf("open existing stream %s: %w", want.Name, err)
	}
	have := st.CachedInfo().Config
	for _, s := range want.Subjects {
		if !slices.Contains(have.Subjects, s) {
			return nil, fmt.Errorf("existing stream %s has subjects %v, not %q", want.Name, have.Subjects, s)
		}
	}
	log := c.log.With("stream", want.Name)
	if have.Storage != want.Storage || have.Retention != want.Retention {
		log.Warn("existing stream's storage or retention differs from config and cannot be changed",
			"storage", have.Storage.String(), "want_storage", want.Storage.String(),
			"retention", have.Retention.String(), "want_retention", want.Retention.String())
	}
	diffs := limitDiffs(have, want)
	if len(diffs) == 0 {
		return st, nil
	}
	if c.external {
		log.Warn("existing stream's limits differ from config; keeping the stream's (shared cluster)", diffs...)
		return st, nil
	}
	upd := have
	upd.MaxAge, upd.MaxBytes, upd.Duplicates = want.MaxAge, want.MaxBytes, want.Duplicates
	upd.Discard, upd.MaxMsgsPerSubject, upd.MaxMsgs = want.Discard, want.MaxMsgsPerSubject, want.MaxMsgs
	upd.Replicas = want.Replicas
	st, err = c.cur().js.UpdateStream(ctx, upd)
	if err != nil {
		return nil, fmt.Errorf("update stream %s limits: %w", want.Name, err)
	}
	log.Info("updated stream limits from config", diffs...)
	return st, nil
}

// limitDiffs lists the updatable limits that differ, as hclog key/values.
func limitDiffs(have, want jetstream.StreamConfig) []any {
	var d []any
	if have.MaxAge != want.MaxAge {
		d = append(d, "max_age", have.MaxAge.String(), "want_max_age", want.MaxAge.String())
	}
	if have.MaxBytes != want.MaxBytes {
		d = append(d, "max_bytes", have.MaxBytes, "want_max_bytes", want.MaxBytes)
	}
	if dup(have.Duplicates) != dup(want.Duplicates) {
		d = append(d, "duplicates", have.Duplicates.String(), "want_duplicates", want.Duplicates.String())
	}
	if have.Discard != want.Discard {
		d = append(d, "discard", have.Discard.String(), "want_discard", want.Discard.String())
	}
	if have.MaxMsgsPerSubject != want.MaxMsgsPerSubject && !(have.MaxMsgsPerSubject <= 0 && want.MaxMsgsPerSubject <= 0) {
		d = append(d, "max_msgs_per_subject", have.MaxMsgsPerSubject, "want_max_msgs_per_subject", want.MaxMsgsPerSubject)
	}
	if have.MaxMsgs != want.MaxMsgs && !(have.MaxMsgs <= 0 && want.MaxMsgs <= 0) {
		d = append(d, "max_msgs", have.MaxMsgs, "want_max_msgs", want.MaxMsgs)
	}
	if have.Replicas != want.Replicas {
		d = append(d, "replicas", have.Replicas, "want_replicas", want.Replicas)
	}
	return d
}

// dup normalises the server's default duplicate window (0 means 2 min).
func dup(d time.Duration) time.Duration {
	if d == 0 {
		return 2 * time.Minute
	}
	return d
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

// lastSeq returns the last sequence the events stream assigned; while the
// connection is down it fails at once rather than at ctx's deadline.
func (c *conn) lastSeq(ctx context.Context) (uint64, error) {
	if c.reconnecting() {
		return 0, fmt.Errorf("read %s state: %w", EventsStream, errUnreachable)
	}
	info, err := c.cur().events.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("read %s state: %w", EventsStream, err)
	}
	return info.State.LastSeq, nil
}

// bounds returns the events stream's extent, failing at once while the
// connection is down.
func (c *conn) bounds(ctx context.Context) (Bounds, error) {
	if c.reconnecting() {
		return Bounds{}, fmt.Errorf("read %s state: %w", EventsStream, errUnreachable)
	}
	info, err := c.cur().events.Info(ctx)
	if err != nil {
		return Bounds{}, fmt.Errorf("read %s state: %w", EventsStream, err)
	}
	st := info.State
	if st.Msgs == 0 {
		return Bounds{}, nil
	}
	return Bounds{FirstSeq: st.FirstSeq, LastSeq: st.LastSeq, FirstStored: st.FirstTime, LastStored: st.LastTime}, nil
}
