package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/airouter/airouter/internal/testkit"
	"github.com/airouter/airouter/transport/eventlog"
)

// Views of the past need no key (/health?at=, /api/timeline) and each
// folds the log through a consumer of its own. A router leaves none of
// them on the stream once the view is answered, so views asked for in a
// burst cannot fill the stream's consumer limit: after 60 views the stream
// holds the consumers it held before them.
func TestViewsOfThePastLeaveNoConsumers(t *testing.T) {
	listen := freeListen(t)
	_, cfg := replayConfig(t, eventsAt(tempStore(t), "file", listen), "", newUpstream(t, 200), newUpstream(t, 200))
	r := start(t, cfg)
	nc, err := nats.Connect("nats://" + listen)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testkit.Context(t)
	stream, err := js.Stream(ctx, eventlog.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	consumers := func() int {
		info, err := stream.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Consumers
	}
	if status, _, body := r.do(t, "POST", "/api/ban", testMasterKey, map[string]string{"credential": "cred-a", "model": "gpt-test", "ttl": "1h"}); status != http.StatusOK {
		t.Fatalf("ban: %d %s", status, body)
	}
	at := time.Now().UTC().Format(time.RFC3339Nano)
	before := consumers()
	for i := range 20 {
		for _, path := range []string{"/health?at=" + at, "/api/timeline?since=" + at, "/api/bans?at=" + at} {
			if status, _, body := r.do(t, "GET", path, testMasterKey, nil); status != http.StatusOK {
				t.Fatalf("view %d %s: %d %.300s", i, path, status, body)
			}
		}
	}
	if after := consumers(); after != before {
		t.Fatalf("the stream holds %d consumers after 60 views of the past, %d before them", after, before)
	}
}
