package eventlog

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

// PublishControl syncs the events stream's block files before it returns
// for every control event but a cooldown: a power loss after the answer
// cannot lose it. What is synced is observed through a block file that
// cannot be synced (a link to /dev/null, whose fsync fails): a ban's
// publish reports the failed sync, a cooldown's syncs nothing. Either
// event is stored and acknowledged.
func TestControlEventsAreSyncedBeforeTheyAreAcknowledged(t *testing.T) {
	var logs testkit.Buffer
	l := openTest(t, Options{StoreDir: t.TempDir(), Logger: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn})})
	if l.conn.msgsDir == "" {
		t.Fatal("a file store has no block directory to sync")
	}
	unsyncable := t.TempDir()
	if err := os.Symlink(os.DevNull, filepath.Join(unsyncable, "1.blk")); err != nil {
		t.Fatal(err)
	}
	if err := syncFile(filepath.Join(unsyncable, "1.blk")); err == nil {
		t.Skip("fsync of /dev/null succeeds here; the sync cannot be observed")
	}
	l.conn.msgsDir = unsyncable

	cool := domain.Event{Kind: domain.KindCooldownStarted, ID: "cool-1", At: t0, V: domain.SchemaVersion,
		Cooldown: &domain.Cooldown{Credential: "c", Model: "m", Until: t0.Add(time.Minute), Status: 429}}
	if _, err := l.PublishControl(testkit.Context(t), cool); err != nil {
		t.Fatalf("cooldown: %v", err)
	}
	if s := l.Stats().LastError; strings.Contains(s, "sync") {
		t.Fatalf("a cooldown was synced: %q", s)
	}
	for i, ev := range []domain.Event{banEvent("ban-1", "c", "m"), {Kind: domain.KindBanLifted, ID: "lift-1", At: t0,
		Unban: &domain.Unban{Credential: "c", Model: "m", By: domain.LiftedByAdmin}}} {
		ev.V = domain.SchemaVersion
		seq, err := l.PublishControl(testkit.Context(t), ev)
		if err != nil || seq == 0 {
			t.Fatalf("%s: seq %d, %v; want it stored despite the failed sync", ev.Kind, seq, err)
		}
		want := fmt.Sprintf("seq=%d", seq)
		if !strings.Contains(l.Stats().LastError, "sync the event store after a control event") ||
			!strings.Contains(grepLog(logs.String(), "syncing the event store after a control event failed"), want) {
			t.Fatalf("event %d (%s) was not synced: last error %q, log:\n%s", i, ev.Kind, l.Stats().LastError, logs.String())
		}
	}
}
