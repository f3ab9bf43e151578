package main

import (
	"context"
	"fmt"
	"io"
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
	return checkpointsOf(s.r.Checkpoints(ctx))
}

// checkpointsOf converts the log's checkpoints to incident's.
func checkpointsOf(cps []eventlog.Checkpoint, err error) ([]incident.Checkpoint, error) {
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

// adminViews renders replayed views through the admin API, built as the
// router builds it (adminDeps) over the replayed snapshot with its clock
// fixed at the moment (adminapi.PastView, which the router's ?at= views
// render through too). Without a config (cfg nil) the credentials are the
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
	if view == incident.ViewPolicy {
		var own *domain.BanPolicy
		if v.cfg != nil {
			p := v.cfg.BanPolicy()
			own = &p
		}
		return incident.PolicyView(snap, at, own)
	}
	path, ok := viewPaths[view]
	if !ok {
		return nil, fmt.Errorf("the admin API serves no %s view", view)
	}
	return serveView(v.cfg, snap, at, path)
}

// serveView is the body the admin API serves for path over snap as the
// router served it at moment at.
func serveView(cfg *config.Config, snap *projections.Snapshot, at time.Time, path string) ([]byte, error) {
	var d adminapi.Deps
	if cfg != nil {
		d = adminDeps(cfg, hclog.NewNullLogger())
	} else {
		for _, name := range snap.Credentials() {
			d.Credentials = append(d.Credentials, adminapi.Credential{Name: name})
		}
	}
	body, _, err := adminapi.PastView(d, snap, at, path)
	return body, err
}

// logHistory is the router's own log read back as the admin API's History:
// the fold replay -at prints (incident.HeldStateAt, from the latest
// checkpoint stored at or before the moment), refusing moments the log no
// longer holds.
type logHistory struct {
	log *incident.Log
}

// newLogHistory reads l, the router's log.
func newLogHistory(l *eventlog.Log) logHistory {
	src := liveLog{l: l}
	return logHistory{log: &incident.Log{Source: src, Checkpoints: src, Name: "the event log"}}
}

func (h logHistory) StateAt(ctx context.Context, at time.Time) (*projections.State, error) {
	return incident.HeldStateAt(ctx, h.log, at)
}

func (h logHistory) EventsAfter(ctx context.Context, st *projections.State, until time.Time, fn func(domain.Event) error) error {
	return h.log.WalkTo(ctx, st.Pos().ResumeSeq(), until, fn)
}

// liveLog is the router's eventlog.Log as incident's Source and
// CheckpointStore.
type liveLog struct {
	l *eventlog.Log
}

func (s liveLog) Events(ctx context.Context, from uint64, fn func(domain.Event) error) error {
	return s.l.Read(ctx, from, 0, func(ev domain.Event, _ uint64) error { return fn(ev) })
}

func (s liveLog) Checkpoints(ctx context.Context) ([]incident.Checkpoint, error) {
	return checkpointsOf(s.l.Checkpoints(ctx))
}

// toolLogger is the log subcommands' logger: warnings and errors on stderr.
func toolLogger(stderr io.Writer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "airouter", Level: hclog.Warn, Output: stderr})
}
