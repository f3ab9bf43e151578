package eventlog

import (
	"bytes"
	"context"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/internal/testkit"
)

func TestCheckpointsSurviveRestartAndKeepTheLatest(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(testkit.Context(t), Options{StoreDir: dir, Logger: testkit.Logger(t, hclog.Warn)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testkit.Context(t)
	if _, _, ok, err := l.LoadCheckpoint(ctx); ok || err != nil {
		t.Fatalf("empty log: ok %v, err %v", ok, err)
	}
	for seq := uint64(10); seq <= 30; seq += 10 {
		if err := l.SaveCheckpoint(ctx, seq, []byte{byte(seq)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.SaveCheckpoint(ctx, 40, make([]byte, maxPayload)); err == nil {
		t.Error("saved a checkpoint larger than a message")
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}

	l = openTest(t, Options{StoreDir: dir})
	seq, data, ok, err := l.LoadCheckpoint(ctx)
	if err != nil || !ok || seq != 30 || !bytes.Equal(data, []byte{30}) {
		t.Fatalf("LoadCheckpoint = %d, %v, %v, %v; want 30, [30]", seq, data, ok, err)
	}
	info, err := l.conn.cur().ckpts.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 2 || info.Config.MaxAge != 0 {
		t.Errorf("checkpoints stream keeps %d messages (max age %s), want 2 and no age limit",
			info.State.Msgs, info.Config.MaxAge)
	}
}
