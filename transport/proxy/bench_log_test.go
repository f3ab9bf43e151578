package proxy

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
	"github.com/airouter/airouter/transport/eventlog"
)

// benchAirouterWithLog is benchAirouter with the real event sourcing behind
// it, as `serve` wires it: every outcome goes through the log's bounded
// queue into an embedded JetStream (file storage), one ordered consumer
// folds it into projections.Live, and selection reads Live's snapshot. All
// of it runs in this process, so its CPU is counted against the proxy.
// batching reports how many events the log stored in how many messages.
func benchAirouterWithLog(b *testing.B, upstreamURL string) (h http.Handler, batching func() string) {
	ctx := context.Background()
	lg, err := eventlog.Open(ctx, eventlog.Options{StoreDir: b.TempDir(), Logger: hclog.NewNullLogger()})
	if err != nil {
		b.Fatal(err)
	}
	live := projections.NewLive(nil)
	stop, err := lg.Consume(ctx, 1, live.Apply)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stop()
		_ = lg.Close(context.Background())
	})
	creds := []Credential{
		{Name: "a", Type: domain.CredentialOpenAI, BaseURL: upstreamURL + "/v1", APIKey: "sk-bench-a-0123456789", RPM: 1 << 30, TPM: 1 << 30},
		{Name: "b", Type: domain.CredentialOpenAI, BaseURL: upstreamURL + "/v1", APIKey: "sk-bench-b-0123456789", RPM: 1 << 30, Weight: 2},
	}
	routes := []Route{{Model: "gpt-4o", Credential: "a", RPM: 1 << 30}, {Model: "gpt-4o", Credential: "b", UpstreamModel: "gpt-4o-2024-08-06"}}
	p, err := New(Deps{
		Credentials: creds, Routes: routes, MasterKey: masterKey, RequestTimeout: 60 * time.Second,
		Gate: func() Gate { return live.Load() },
		Record: func(o domain.Outcome) {
			lg.Publish(domain.Event{Kind: domain.KindOutcomeRecorded, At: time.Now().UTC(), Outcome: &o})
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Close)
	return p.Handler(), func() string {
		last, err := lg.LastSeq(ctx)
		if err != nil || last == 0 {
			return fmt.Sprintf("log: %v", err)
		}
		events := lg.Stats().Published
		return fmt.Sprintf("log: %d events in %d messages (%.1f a message)", events, last, float64(events)/float64(last))
	}
}
