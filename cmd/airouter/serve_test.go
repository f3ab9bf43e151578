package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

// The router starts on its embedded log, answers /health and proxies a
// request, and its outcomes land in the log.
func TestServeOnTheEmbeddedLog(t *testing.T) {
	up := newUpstream(t, 200)
	r := start(t, testConfig(t, tempStore(t), "file", "", up))

	status, _, body := r.do(t, "GET", "/health", "", nil)
	if status != 200 {
		t.Fatalf("/health = %d %s", status, body)
	}
	var h struct {
		Status      string                     `json:"status"`
		Total       int                        `json:"total_credentials"`
		Credentials map[string]json.RawMessage `json:"credentials"`
	}
	if err := json.Unmarshal(body, &h); err != nil {
		t.Fatalf("/health body: %v: %s", err, body)
	}
	if h.Status != "healthy" || h.Total != 1 || h.Credentials["cred-a"] == nil {
		t.Fatalf("/health = %s", body)
	}
	if strings.Contains(string(body), "sk-upstream-secret") {
		t.Fatalf("/health leaks an upstream key: %s", body)
	}

	status, _, body = chat(t, r)
	if status != 200 || !strings.Contains(string(body), "hello") {
		t.Fatalf("chat = %d %s", status, body)
	}
	testkit.Eventually(t, "the outcome to be applied", func() bool { return r.live.Load().Seq() >= 1 })

	status, _, body = r.do(t, "GET", "/metrics", "", nil)
	want := `auto_ai_router_requests_total{credential="cred-a",endpoint="/v1/chat/completions",model="gpt-test",status="200"} 1`
	if status != 200 || !strings.Contains(string(body), want) {
		t.Fatalf("/metrics = %d, want a line %s", status, want)
	}
	status, _, body = r.do(t, "GET", "/nowhere", "", nil)
	if status != 404 || !strings.Contains(string(body), `"type":"not_found_error"`) {
		t.Fatalf("unknown path = %d %s", status, body)
	}
}

// A restart with file storage keeps what the log holds; with memory storage
// it forgets.
func TestRestartKeepsBansWithFileStorageOnly(t *testing.T) {
	for _, tc := range []struct {
		storage string
		kept    bool
	}{{"file", true}, {"memory", false}} {
		t.Run(tc.storage, func(t *testing.T) {
			up := newUpstream(t, 200)
			store := tempStore(t)
			cfg := testConfig(t, store, tc.storage, "", up)
			r := start(t, cfg)
			ctx := context.Background()
			until := time.Now().Add(time.Hour).UTC()
			seq, err := r.log.PublishControl(ctx, domain.Event{
				Kind: domain.KindBanImposed, ID: "test-ban-1", At: time.Now().UTC(),
				Ban: &domain.Ban{Credential: "cred-a", Model: domain.AllModels, Origin: domain.OriginAdmin,
					Reason: "admin: drain", Since: time.Now().UTC(), Until: &until},
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := r.live.WaitFor(ctx, seq); err != nil {
				t.Fatal(err)
			}
			if _, banned := r.live.Load().Blocked("cred-a", "gpt-test", time.Now()); !banned {
				t.Fatal("the ban is not applied")
			}
			r.stop()

			r2 := start(t, cfg)
			_, banned := r2.live.Load().Blocked("cred-a", "gpt-test", time.Now())
			if banned != tc.kept {
				t.Fatalf("after restart banned = %v, want %v", banned, tc.kept)
			}
		})
	}
}

// A second airouter on the same store directory refuses with a clear error
// instead of silently sharing (and losing) events.
func TestSecondRouterOnTheSameStoreRefuses(t *testing.T) {
	up := newUpstream(t, 200)
	cfg := testConfig(t, tempStore(t), "file", "", up)
	start(t, cfg)
	began := time.Now()
	_, err := startRouter(context.Background(), cfg, testkit.Logger(t, hclog.Info))
	if err == nil {
		t.Fatal("a second router started on the same store_dir")
	}
	if !strings.Contains(err.Error(), "in use by another airouter") {
		t.Fatalf("error = %v", err)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Fatalf("refusing took %s", d)
	}
}

// A log that cannot start fails serve with the cause; it does not hang.
func TestFailedLogStartFailsWithTheCause(t *testing.T) {
	up := newUpstream(t, 200)
	dir := t.TempDir()
	file := filepath.Join(dir, "not-a-dir")
	writeFile(t, file, "x")
	cfg := testConfig(t, file, "file", "", up)
	_, err := startRouter(context.Background(), cfg, testkit.Logger(t, hclog.Info))
	if err == nil {
		t.Fatal("the router started on a store_dir that is a file")
	}
	if !strings.Contains(err.Error(), "event log") {
		t.Fatalf("error does not say what failed: %v", err)
	}
}

// serve with a config that does not load fails with every problem named.
func TestServeRejectsABadConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	writeFile(t, path, "server:\n  prot: 1\ncredentials: []\n")
	err := dispatch(context.Background(), []string{"serve", "-config", path}, nil, testkit.Writer(t))
	if err == nil || !strings.Contains(err.Error(), "server.prot") || !strings.Contains(err.Error(), "master_key") {
		t.Fatalf("error = %v", err)
	}
}

// A router restarted after every event aged out of the stream (down longer
// than events.max_age) starts from its checkpoint and is ready at once: it
// does not wait for messages nobody can deliver any more.
func TestRestartAfterEveryEventAgedOut(t *testing.T) {
	up := newUpstream(t, 200)
	store := tempStore(t)
	cfg := buildConfig(t, fmt.Sprintf("events:\n  store_dir: %s\n  max_age: 1s\n", store), "", up)
	r := start(t, cfg)
	until := time.Now().Add(time.Hour).UTC()
	ctx := context.Background()
	seq, err := r.log.PublishControl(ctx, domain.Event{
		Kind: domain.KindBanImposed, ID: "test-ban-aged", At: time.Now().UTC(),
		Ban: &domain.Ban{Credential: "cred-a", Model: domain.AllModels, Origin: domain.OriginAdmin,
			Reason: "admin: drain", Since: time.Now().UTC(), Until: &until},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.live.WaitFor(ctx, seq); err != nil {
		t.Fatal(err)
	}
	r.stop() // saves a checkpoint at seq
	time.Sleep(1500 * time.Millisecond)

	began := time.Now()
	r2 := start(t, cfg)
	// What r2 itself published at start (its heartbeat) is newer than seq.
	if b, err := r2.log.Bounds(ctx); err != nil || (b.LastSeq != 0 && b.FirstSeq <= seq) {
		t.Fatalf("the stream still holds %+v (%v); the test needs every event up to %d aged out", b, err, seq)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Fatalf("ready after %s", d)
	}
	if _, banned := r2.live.Load().Blocked("cred-a", "gpt-test", time.Now()); !banned {
		t.Fatal("the ban from the checkpoint is gone")
	}
	if status, _, body := chat(t, r2); status != http.StatusTooManyRequests {
		t.Fatalf("chat with the only credential banned = %d %s, want 429", status, body)
	}
}
