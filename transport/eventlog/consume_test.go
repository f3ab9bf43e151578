package eventlog

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/eventjson"
	"github.com/airouter/airouter/internal/testkit"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// rawPublish stores bytes on a subject through a separate plain client, as
// a newer airouter or a foreign tool could.
func rawPublish(t *testing.T, l *Log, subject string, data []byte) {
	t.Helper()
	nc, err := nats.Connect("", nats.InProcessServer(l.conn.srv))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(testkit.Context(t), subject, data); err != nil {
		t.Fatal(err)
	}
}

func TestConsumeSkipsAndCountsUnusableEvents(t *testing.T) {
	l := openTest(t, Options{StoreDir: t.TempDir()})
	ctx := testkit.Context(t)
	if _, err := l.PublishControl(ctx, banEvent("b1", "c1", "m1")); err != nil {
		t.Fatal(err)
	}
	rawPublish(t, l, "airouter.events.outcome.c1.m1", []byte("not json"))
	future, _ := json.Marshal(map[string]any{"v": 1, "kind": "quota.exhausted", "at": t0})
	rawPublish(t, l, "airouter.events.quota.c1", future)
	rawPublish(t, l, "airouter.events.quota.c2", future)
	newer, _ := json.Marshal(map[string]any{"v": domain.SchemaVersion + 1, "kind": domain.KindOutcomeRecorded, "outcome": map[string]any{}})
	rawPublish(t, l, "airouter.events.outcome.c1.m1", newer)
	if _, err := l.PublishControl(ctx, banEvent("b2", "c2", "m2")); err != nil {
		t.Fatal(err)
	}

	ch := make(chan domain.Event, 10)
	var pendings []uint64
	stop, err := l.Consume(ctx, 0, func(ev domain.Event, pending uint64) {
		pendings = append(pendings, pending)
		ch <- ev
	})
	if err != nil {
		t.Fatal(err)
	}
	evs := waitEvents(t, ch, 6)
	stop()
	wantKinds := []domain.Kind{domain.KindBanImposed, "", "", "", "", domain.KindBanImposed}
	for i, ev := range evs {
		if ev.Kind != wantKinds[i] || ev.Seq != uint64(i+1) || pendings[i] != uint64(5-i) {
			t.Errorf("call %d: kind %q seq %d pending %d; want kind %q seq %d pending %d",
				i, ev.Kind, ev.Seq, pendings[i], wantKinds[i], i+1, 5-i)
		}
		if ev.Kind == "" && (ev.Ban != nil || ev.Outcome != nil) {
			t.Errorf("skip marker %d carries a payload", i)
		}
	}
	if s := l.Stats(); s.Undecodable != 1 || s.Skipped != 3 {
		t.Errorf("stats: undecodable %d skipped %d, want 1 and 3", s.Undecodable, s.Skipped)
	}
}

func TestConsumeFromSequence(t *testing.T) {
	l := openTest(t, Options{StoreDir: t.TempDir()})
	publishOutcomesOneByOne(t, l, 0, 10)
	ch := make(chan domain.Event, 10)
	stop, err := l.Consume(testkit.Context(t), 7, func(ev domain.Event, _ uint64) { ch <- ev })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	evs := waitEvents(t, ch, 4)
	if evs[0].Seq != 7 || evs[3].Seq != 10 || evs[0].Outcome.RequestID != "req-00000006" {
		t.Fatalf("events = %+v", evs)
	}
	l.Publish(outcomeEvent(10)) // a live event follows the replay
	if ev := waitEvents(t, ch, 1)[0]; ev.Seq != 11 {
		t.Fatalf("live event seq %d, want 11", ev.Seq)
	}

	// Starting before the oldest stored event (expired) starts at it.
	if err := l.conn.cur().events.Purge(testkit.Context(t), jetstream.WithPurgeSequence(9)); err != nil {
		t.Fatal(err)
	}
	ch2 := make(chan domain.Event, 10)
	stop2, err := l.Consume(testkit.Context(t), 3, func(ev domain.Event, _ uint64) { ch2 <- ev })
	if err != nil {
		t.Fatal(err)
	}
	defer stop2()
	if evs := waitEvents(t, ch2, 3); evs[0].Seq != 9 || evs[2].Seq != 11 {
		t.Fatalf("after purge: %+v", evs)
	}
}

func TestReadStopsAtTheEnd(t *testing.T) {
	l := openTest(t, Options{StoreDir: t.TempDir(), Storage: StorageMemory})
	ctx := testkit.Context(t)
	if err := l.Read(ctx, 0, 0, func(domain.Event, uint64) error { t.Error("event in empty stream"); return nil }); err != nil {
		t.Fatal(err)
	}
	publishOutcomesOneByOne(t, l, 0, 20)
	var seqs []uint64
	if err := l.Read(ctx, 5, 9, func(ev domain.Event, _ uint64) error {
		seqs = append(seqs, ev.Seq)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(seqs) != 5 || seqs[0] != 5 || seqs[4] != 9 {
		t.Fatalf("Read(5, 9) gave %v", seqs)
	}
	halt := errors.New("enough")
	n := 0
	err := l.Read(ctx, 0, 0, func(domain.Event, uint64) error {
		n++
		if n == 3 {
			return halt
		}
		return nil
	})
	if !errors.Is(err, halt) || n != 3 {
		t.Fatalf("Read returned %v after %d events, want the fn's error after 3", err, n)
	}
	if err := l.Read(ctx, 21, 0, func(domain.Event, uint64) error { t.Error("event past the end"); return nil }); err != nil {
		t.Fatal(err)
	}
}

// A NATS client on TCP receives ban events; a second airouter in external
// mode shares the stream; a ban follower sees bans and unbans only.
func TestListenServesNATSClientsAndExternalMode(t *testing.T) {
	l := openTest(t, Options{StoreDir: t.TempDir(), Listen: "127.0.0.1:0"})
	url := l.ClientURL()
	if !strings.HasPrefix(url, "nats://127.0.0.1:") || strings.HasSuffix(url, ":0") {
		t.Fatalf("ClientURL = %q", url)
	}
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("airouter.events.ban.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	follow := make(chan domain.Event, 10)
	stop, err := l.Follow(testkit.Context(t), BanSubjects(), func(ev domain.Event, _ uint64) { follow <- ev })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	ext := openTest(t, Options{NatsURL: url})
	ctx := testkit.Context(t)
	ext.Publish(outcomeEvent(1))
	if _, err := ext.PublishControl(ctx, banEvent("b1", "c1", "gpt-4.1")); err != nil {
		t.Fatal(err)
	}
	unban := domain.Event{Kind: domain.KindBanLifted, ID: "u1", At: t0,
		Unban: &domain.Unban{Credential: "c1", Model: "gpt-4.1", By: domain.LiftedByAdmin}}
	if _, err := ext.PublishControl(ctx, unban); err != nil {
		t.Fatal(err)
	}

	msg, err := sub.NextMsg(20e9)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Subject != "airouter.events.ban.c1.gpt-4~2E1" {
		t.Errorf("TCP client got subject %q", msg.Subject)
	}
	if ev, err := eventjson.Decode(msg.Data); err != nil || ev.Ban == nil || ev.Ban.Model != "gpt-4.1" {
		t.Errorf("TCP client got %q (%v)", msg.Data, err)
	}
	got := waitEvents(t, follow, 2)
	if got[0].Kind != domain.KindBanImposed || got[1].Kind != domain.KindBanLifted || got[0].Seq >= got[1].Seq {
		t.Errorf("follower got %+v", got)
	}
	if err := ext.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(readAll(t, l)); n != 3 {
		t.Errorf("stream holds %d events, want 3", n)
	}
}

func TestConsumersStopWithContextAndClose(t *testing.T) {
	l, err := Open(testkit.Context(t), Options{StoreDir: t.TempDir(), Logger: testkit.Logger(t, hclog.Warn)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testkit.Context(t))
	if _, err := l.Consume(ctx, 0, func(domain.Event, uint64) {}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Follow(testkit.Context(t), nil, func(domain.Event, uint64) {}); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := l.Close(testkit.Context(t)); err != nil {
		t.Fatal(err)
	}
	l.cons.mu.Lock()
	registered := len(l.cons.running)
	l.cons.mu.Unlock()
	if registered != 0 {
		t.Errorf("%d consumers still registered after Close", registered)
	}
	if _, err := l.Consume(testkit.Context(t), 0, func(domain.Event, uint64) {}); err == nil {
		t.Error("Consume succeeded on a closed log")
	}
}
