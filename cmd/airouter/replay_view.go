package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/adminapi"
	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
	"github.com/airouter/airouter/transport/eventlog"
)

// The views replay prints at a moment.
const (
	viewBans   = "bans"   // GET /api/bans
	viewHealth = "health" // GET /health
	viewState  = "state"  // projections.View: everything the log determines
)

func validView(v string) bool { return v == viewBans || v == viewHealth || v == viewState }

// errReplayReadOnly answers any change asked of a replayed view.
var errReplayReadOnly = errors.New("a replayed log is read-only")

// printView folds the log up to at and prints the view as the router served
// it at that moment.
func printView(ctx context.Context, src *logSource, cfg *config.Config, at time.Time, view string, w io.Writer) error {
	state, _, err := stateAt(ctx, src, at, true)
	if err != nil {
		return err
	}
	snap := state.Snapshot()
	var body []byte
	switch view {
	case viewState:
		body, err = json.Marshal(snap.View(at))
		body = append(body, '\n')
	case viewBans:
		body, err = serveView(cfg, snap, at, "/api/bans")
	default:
		body, err = serveView(cfg, snap, at, "/health")
	}
	if err != nil {
		return err
	}
	_, err = w.Write(body)
	return err
}

// stateAt is the projection state the router had at moment at.
//
// The rule: events are folded in log order, up to (not including) the
// first event stamped after at. The log's order is the order the router
// applied events in, and an event is stored after the moment it is stamped
// with, so this prefix is what the router had applied by then. An event
// stamped at or before at that lies behind a later-stamped one (a decision
// published late, a replica whose clock runs ahead) is left out: the router
// had not applied it at that moment either.
//
// With useCheckpoints, the fold starts from the latest stored checkpoint
// that was stored at or before at, as the router does at start: every
// event up to its position had been applied by then, so the answer is the
// same and only the events after it are read. It returns the position of
// the checkpoint it started from (0 for none).
func stateAt(ctx context.Context, src *logSource, at time.Time, useCheckpoints bool) (*projections.State, uint64, error) {
	state, from, ckptSeq := projections.NewState(), uint64(0), uint64(0)
	if useCheckpoints {
		cps, err := src.checkpoints(ctx)
		if err != nil {
			return nil, 0, err
		}
		if cp, ok := latestCheckpoint(cps, at); ok {
			if st, err := projections.UnmarshalCheckpoint(cp.Data); err == nil && st.Seq() == cp.Seq {
				state, from, ckptSeq = st, st.Pos().ResumeSeq(), cp.Seq
			}
		}
	}
	err := src.events(ctx, from, func(ev domain.Event) error {
		if ev.Kind != "" && ev.At.After(at) {
			return errStop
		}
		state = projections.Apply(state, ev)
		return nil
	})
	return state, ckptSeq, err
}

// latestCheckpoint is the newest checkpoint stored at or before at.
func latestCheckpoint(cps []eventlog.Checkpoint, at time.Time) (eventlog.Checkpoint, bool) {
	var best eventlog.Checkpoint
	found := false
	for _, cp := range cps {
		if !cp.Stored.After(at) && (!found || cp.Seq > best.Seq) {
			best, found = cp, true
		}
	}
	return best, found
}

// serveView asks the admin API, built as the router builds it (adminDeps)
// over the replayed snapshot with its clock fixed at at, for path, and
// returns the body it serves. Without a config the credentials are the ones
// the log names.
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
