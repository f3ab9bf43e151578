package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/adminapi"
	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/incident"
	"github.com/airouter/airouter/projections"
	"github.com/airouter/airouter/transport/eventlog"
)

// This file adapts the router's parts to the ports of package incident,
// where the operator tools live: an eventlog.Reader is a log they read, and
// adminapi renders the views replay prints at a moment.

// readerLog is an eventlog.Reader as incident's Source, CheckpointStore,
// TimeIndex and Follower.
type readerLog struct {
	r *eventlog.Reader
	// what names the log in errors.
	what string
}

func (s readerLog) Events(ctx context.Context, from uint64, fn func(domain.Event) error) error {
	return s.r.Read(ctx, from, 0, func(ev domain.Event, _ uint64) error { return fn(ev) })
}

func (s readerLog) Checkpoints(ctx context.Context) ([]incident.Checkpoint, error) {
	cps, err := s.r.Checkpoints(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]incident.Checkpoint, len(cps))
	for i, cp := range cps {
		out[i] = incident.Checkpoint{Seq: cp.Seq, Data: cp.Data, Stored: cp.Stored}
	}
	return out, nil
}

func (s readerLog) SeqAt(ctx context.Context, t time.Time) (uint64, error) {
	return s.r.SeqAt(ctx, t)
}

// Follow follows every subject, or only airouter.events.ban.> and
// airouter.events.unban.> with bansOnly.
func (s readerLog) Follow(ctx context.Context, bansOnly bool, fn func(domain.Event, uint64)) (func(), error) {
	var subjects []string
	if bansOnly {
		subjects = eventlog.BanSubjects()
	}
	stop, err := s.r.Follow(ctx, subjects, fn)
	if err != nil {
		return nil, fmt.Errorf("follow the log (%s): %w", s.what, err)
	}
	return stop, nil
}

// errReplayReadOnly answers any change asked of a replayed view.
var errReplayReadOnly = errors.New("a replayed log is read-only")

// adminViews renders replayed views through the admin API, built as the
// router builds it (adminDeps) over the replayed snapshot with its clock
// fixed at the moment. Without a config (cfg nil) the credentials are the
// ones the log names.
type adminViews struct {
	cfg *config.Config
}

// viewPaths are the admin API paths that serve incident's views.
var viewPaths = map[incident.View]string{
	incident.ViewBans:   "/api/bans",
	incident.ViewHealth: "/health",
}

func (v adminViews) Render(snap *projections.Snapshot, at time.Time, view incident.View) ([]byte, error) {
	path, ok := viewPaths[view]
	if !ok {
		return nil, fmt.Errorf("the admin API serves no %s view", view)
	}
	return serveView(v.cfg, snap, at, path)
}

// serveView asks the admin API over snap, its clock fixed at at, for path,
// and returns the body it serves.
func serveView(cfg *config.Config, snap *projections.Snapshot, at time.Time, path string) ([]byte, error) {
	logger := hclog.NewNullLogger()
	var d adminapi.Deps
	if cfg != nil {
		d = adminDeps(cfg, logger)
	} else {
		d = adminapi.Deps{MasterKey: randomKey(), Logger: logger}
		for _, name := range snap.Credentials() {
			d.Credentials = append(d.Credentials, adminapi.Credential{Name: name})
		}
	}
	d.Snapshot = func() *projections.Snapshot { return snap }
	d.WaitFor = func(context.Context, uint64) error { return errReplayReadOnly }
	d.Publish = func(context.Context, domain.Event) (uint64, error) { return 0, errReplayReadOnly }
	d.Clock = func() time.Time { return at }
	// What the log held at that moment: everything up to the snapshot.
	// The live counters (published, dropped, failed) are not in the log.
	d.LogStatus = func() adminapi.LogStatus { return adminapi.LogStatus{Connected: true, LastSeq: snap.Seq()} }
	api, err := adminapi.New(d)
	if err != nil {
		return nil, fmt.Errorf("build the admin API over the replayed state: %w", err)
	}
	req, err := http.NewRequest(http.MethodGet, path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+d.MasterKey)
	rec := &bodyRecorder{header: http.Header{}}
	api.Handler().ServeHTTP(rec, req)
	if rec.status != http.StatusOK && !(path == "/health" && rec.status == http.StatusServiceUnavailable) {
		return nil, fmt.Errorf("replayed %s answered %d: %s", path, rec.status, bytes.TrimSpace(rec.body.Bytes()))
	}
	return rec.body.Bytes(), nil
}

// bodyRecorder is the http.ResponseWriter serveView reads an answer from.
type bodyRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *bodyRecorder) Header() http.Header { return r.header }

func (r *bodyRecorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *bodyRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}

// randomKey is a throwaway master key for a replayed API without a config.
func randomKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// toolLogger is the log subcommands' logger: warnings and errors on stderr.
func toolLogger(stderr io.Writer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "airouter", Level: hclog.Warn, Output: stderr})
}
