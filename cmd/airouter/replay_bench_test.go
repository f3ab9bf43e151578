package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/incident"
	"github.com/airouter/airouter/projections"
	"github.com/airouter/airouter/transport/eventlog"
)

// syntheticPolicy is the ban policy syntheticLog decides with.
var syntheticPolicy = domain.BanPolicy{
	Default: domain.Rule{MaxAttempts: 3, Duration: 5 * time.Minute},
	Codes:   []int{429, 502},
	Rules:   map[int]domain.Rule{429: {MaxAttempts: 3, Duration: time.Minute}},
	Bench:   domain.BenchPolicy{Failures: 5, Window: time.Minute, Duration: time.Minute},
}

// loggedEvent is one event of a synthetic log: its stamp and where the log
// put it.
type loggedEvent struct {
	At  time.Time
	Pos domain.Pos
}

// syntheticLog writes n events into a store in dir as a router would: an
// outcome per request on 100 credentials x 10 models (the first ten
// credentials failing often, with 429s and 502s), each followed by the
// decisions domain.Decide takes on it. Events are stamped with the clock as
// they are made. The writer decides from its own fold with stand-in
// positions (the publisher batches outcomes, so their positions are known
// only once stored); the decisions' ids therefore name those. After the
// ckptAt-th event it reads the log back and saves a projection checkpoint
// of it, as the router does every 50,000 events. It returns every event in
// log order.
func syntheticLog(tb testing.TB, dir string, n, ckptAt int) []loggedEvent {
	tb.Helper()
	ctx := context.Background()
	lg, err := eventlog.Open(ctx, eventlog.Options{StoreDir: dir, MaxBytes: 4 << 30, Logger: hclog.NewNullLogger()})
	if err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	state := projections.NewState()
	written := 0
	publish := func(ev domain.Event) {
		written++
		ev.Seq = uint64(written)
		for !lg.Publish(ev) {
			time.Sleep(time.Millisecond) // the queue is full: let the publisher drain
		}
		state = projections.Apply(state, ev)
		if written == ckptAt {
			saveSyntheticCheckpoint(tb, lg)
		}
	}
	for i := 0; written < n; i++ {
		c := rng.IntN(100)
		o := domain.Outcome{Credential: fmt.Sprintf("cred-%02d", c), Model: fmt.Sprintf("model-%d", rng.IntN(10)),
			Status: 200, Class: domain.ClassOK, LatencyMS: int64(80 + rng.IntN(400)), Attempt: 1, RequestID: fmt.Sprintf("req-%d", i)}
		if r := rng.IntN(100); c < 10 && r < 30 {
			o.Status, o.Class = 429, domain.ClassRateLimited
		} else if c < 10 && r < 40 {
			o.Status, o.Class = 502, domain.ClassServerError
		}
		ev := domain.Event{V: 1, Kind: domain.KindOutcomeRecorded, At: time.Now().UTC(), Outcome: &o, Seq: uint64(written + 1)}
		publish(ev)
		for _, d := range domain.Decide(syntheticPolicy, ev, state.Facts(ev)) {
			if written < n {
				publish(d)
			}
		}
	}
	evs := make([]loggedEvent, 0, n)
	err = lg.Flush(ctx)
	if err == nil {
		err = lg.Read(ctx, 0, 0, func(ev domain.Event, _ uint64) error {
			evs = append(evs, loggedEvent{At: ev.At, Pos: ev.Pos()})
			return nil
		})
	}
	if err == nil && len(evs) != n {
		err = fmt.Errorf("read back %d events of %d", len(evs), n)
	}
	if err == nil {
		err = lg.Close(ctx)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return evs
}

// saveSyntheticCheckpoint folds everything lg stored so far and saves it as
// a checkpoint.
func saveSyntheticCheckpoint(tb testing.TB, lg *eventlog.Log) {
	ctx := context.Background()
	folded := projections.NewState()
	err := lg.Flush(ctx)
	if err == nil {
		err = lg.Read(ctx, 0, 0, func(ev domain.Event, _ uint64) error {
			folded = projections.Apply(folded, ev)
			return nil
		})
	}
	var data []byte
	if err == nil {
		data, err = folded.MarshalCheckpoint()
	}
	if err == nil {
		err = lg.SaveCheckpoint(ctx, folded.Seq(), data)
	}
	if err != nil {
		tb.Fatal(err)
	}
}

// foldedBy is the position of the last event a fold up to moment at takes
// in: the one before the first event stamped after at (incident.StateAt's
// rule).
func foldedBy(evs []loggedEvent, at time.Time) domain.Pos {
	var last domain.Pos
	for _, e := range evs {
		if e.At.After(at) {
			break
		}
		last = e.Pos
	}
	return last
}

// A view at a moment after a checkpoint is the same whether the fold starts
// from the checkpoint or from the first event.
func TestReplayAtFromACheckpointEqualsAFullFold(t *testing.T) {
	store := filepath.Join(t.TempDir(), "data")
	evs := syntheticLog(t, store, 3000, 2000)
	ctx := context.Background()
	src, err := openReader(ctx, eventlog.ReaderOptions{StoreDir: store, TempDir: t.TempDir()}, "test store")
	if err != nil {
		t.Fatal(err)
	}
	defer src.close()
	for _, pos := range []int{1000, 2500, 3000} {
		at := evs[pos-1].At
		fromCkpt, ckpt, err := incident.StateAt(ctx, src.log, at, true)
		if err != nil {
			t.Fatal(err)
		}
		full, none, err := incident.StateAt(ctx, src.log, at, false)
		if err != nil {
			t.Fatal(err)
		}
		if wantCkpt := pos > 2000; (ckpt == evs[2000-1].Pos.Seq) != wantCkpt || none != 0 {
			t.Fatalf("at event %d: started from checkpoint %d (full fold from %d)", pos, ckpt, none)
		}
		if want := foldedBy(evs, at); full.Pos() != want {
			t.Fatalf("at event %d: folded to %v, want %v", pos, full.Pos(), want)
		}
		a, _ := json.Marshal(fromCkpt.Snapshot().StateView(at))
		b, _ := json.Marshal(full.Snapshot().StateView(at))
		if string(a) != string(b) {
			t.Fatalf("at event %d the views differ:\nfrom the checkpoint %s\nfull fold %s", pos, a, b)
		}
		ha, err := serveView(nil, fromCkpt.Snapshot(), at, "/health")
		if err != nil {
			t.Fatal(err)
		}
		hb, _ := serveView(nil, full.Snapshot(), at, "/health")
		if string(ha) != string(hb) {
			t.Fatalf("at event %d /health differs:\n%s\n%s", pos, ha, hb)
		}
	}
}

// BenchmarkReplay1M reads a store of 1,000,000 events (outcomes and the
// decisions taken on them, a checkpoint at 950,000):
//
//	go test ./cmd/airouter -run XXX -bench Replay1M -benchtime 3x
//
// open copies the store and recovers the copy (every replay of a store
// directory pays this once); timeline is the whole replay to a timeline
// (fold, failure tracking, summaries), from the store and from an exported
// file; at-end is the state for `-at` at the 990,000th event, from the
// checkpoint as replay does and by a full fold, rendered as /health.
func BenchmarkReplay1M(b *testing.B) {
	const n = 1_000_000
	dir := b.TempDir()
	store := filepath.Join(dir, "data")
	began := time.Now()
	evs := syntheticLog(b, store, n, 950_000)
	b.Logf("wrote %d events in %s", n, time.Since(began).Round(time.Millisecond))
	ctx := context.Background()
	open := func(b *testing.B) *logSource {
		src, err := openReader(ctx, eventlog.ReaderOptions{StoreDir: store, TempDir: dir}, "bench store")
		if err != nil {
			b.Fatal(err)
		}
		return src
	}

	b.Run("open", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			open(b).close()
		}
	})
	timeline := func(b *testing.B, l *incident.Log) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			tl := incident.NewTimeline(io.Discard, incident.Filter{})
			count := 0
			if err := l.Walk(ctx, 0, func(ev domain.Event) error { count++; return tl.Add(ev) }); err != nil {
				b.Fatal(err)
			}
			if err := tl.Finish(); err != nil || count != n {
				b.Fatalf("replayed %d events: %v", count, err)
			}
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	}
	b.Run("timeline/store", func(b *testing.B) {
		src := open(b)
		defer src.close()
		b.ResetTimer()
		timeline(b, src.log)
	})
	b.Run("timeline/file", func(b *testing.B) {
		src := open(b)
		file := filepath.Join(dir, "export.jsonl")
		f, err := os.Create(file)
		if err != nil {
			b.Fatal(err)
		}
		if err := incident.Copy(ctx, src.log, 0, incident.Filter{}, incident.NewJSONL(f, incident.Filter{})); err != nil {
			b.Fatal(err)
		}
		f.Close()
		src.close()
		exported, err := incident.OpenFile(file, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		timeline(b, exported.Log())
	})
	at := evs[990_000-1].At
	for _, tc := range []struct {
		name        string
		checkpoints bool
	}{{"at-end/checkpoint", true}, {"at-end/full", false}} {
		b.Run(tc.name, func(b *testing.B) {
			src := open(b)
			defer src.close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				st, _, err := incident.StateAt(ctx, src.log, at, tc.checkpoints)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := serveView(nil, st.Snapshot(), at, "/health"); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/answer")
		})
	}
}
