package eventlog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/internal/testkit"
)

func TestOpenRejectsBadOptions(t *testing.T) {
	dir := t.TempDir()
	for name, o := range map[string]Options{
		"unknown storage":   {StoreDir: dir, Storage: "tape"},
		"no store dir":      {Storage: StorageFile},
		"negative max age":  {StoreDir: dir, MaxAge: -1},
		"negative bytes":    {StoreDir: dir, MaxBytes: -2},
		"bad listen":        {StoreDir: dir, Listen: "localhost"},
		"bad listen port":   {StoreDir: dir, Listen: "127.0.0.1:http"},
		"too many replicas": {NatsURL: "nats://127.0.0.1:1", Replicas: 9},
	} {
		t.Run(name, func(t *testing.T) {
			l, err := Open(testkit.Context(t), o)
			if err == nil {
				_ = l.Close(context.Background())
				t.Fatal("Open accepted bad options")
			}
		})
	}
}

func TestSecondOpenOnSameDirIsRefused(t *testing.T) {
	dir := t.TempDir()
	openTest(t, Options{StoreDir: dir})

	_, err := Open(testkit.Context(t), Options{StoreDir: dir, Logger: testkit.Logger(t, hclog.Warn)})
	if err == nil {
		t.Fatal("second Open on the same store dir succeeded")
	}
	want := fmt.Sprintf("events.store_dir %q is in use by another airouter (pid %d)", dir, os.Getpid())
	if !strings.Contains(err.Error(), want) || !errors.Is(err, ErrStoreInUse) {
		t.Fatalf("error = %q, want it to contain %q and wrap ErrStoreInUse", err, want)
	}
}

func TestLockIsReleasedOnClose(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(testkit.Context(t), Options{StoreDir: dir, Logger: testkit.Logger(t, hclog.Warn)})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(testkit.Context(t)); err != nil {
		t.Fatal(err)
	}
	openTest(t, Options{StoreDir: dir})
}

func TestOpenFailsFastWhenStoreDirIsAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, storage := range []string{StorageFile, StorageMemory} {
		_, err := Open(testkit.Context(t), Options{StoreDir: file, Storage: storage, Logger: testkit.Logger(t, hclog.Warn)})
		if err == nil || !strings.Contains(err.Error(), "not-a-dir") {
			t.Errorf("%s: error = %v, want one naming the store dir", storage, err)
		}
	}
}

// The server itself fails to start JetStream (its store dir is a file): the
// server reports that through Fatalf, which must come back as Open's error
// rather than a hang or os.Exit.
func TestOpenReturnsServerStartFailure(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "jetstream"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(testkit.Context(t), Options{StoreDir: dir, Logger: testkit.Logger(t, hclog.Warn)})
	if err == nil || !strings.Contains(err.Error(), "JetStream") {
		t.Fatalf("error = %v, want the server's JetStream start failure", err)
	}
	// The failed start released the lock and left nothing running.
	if err := os.Remove(filepath.Join(dir, "jetstream")); err != nil {
		t.Fatal(err)
	}
	openTest(t, Options{StoreDir: dir})
}

func TestRestartKeepsFileEventsAndDropsMemoryEvents(t *testing.T) {
	for _, tc := range []struct {
		storage string
		want    int
	}{{StorageFile, 3}, {StorageMemory, 0}} {
		t.Run(tc.storage, func(t *testing.T) {
			dir := t.TempDir()
			o := Options{StoreDir: dir, Storage: tc.storage, Logger: testkit.Logger(t, hclog.Warn)}
			l, err := Open(testkit.Context(t), o)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				if !l.Publish(outcomeEvent(i)) {
					t.Fatal("Publish refused an event")
				}
			}
			if err := l.Close(testkit.Context(t)); err != nil {
				t.Fatal(err)
			}
			l = openTest(t, o)
			if got := len(readAll(t, l)); got != tc.want {
				t.Errorf("after restart: %d events, want %d", got, tc.want)
			}
			if tc.storage == StorageMemory {
				entries, _ := os.ReadDir(dir)
				if len(entries) != 1 { // only the open instance's directory
					t.Errorf("memory storage left %d directories behind", len(entries))
				}
			}
		})
	}
}

func TestStreamLimitsFollowConfigOnEmbeddedServer(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(testkit.Context(t), Options{StoreDir: dir, MaxBytes: 64 << 20, Logger: testkit.Logger(t, hclog.Warn)})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(testkit.Context(t)); err != nil {
		t.Fatal(err)
	}
	l = openTest(t, Options{StoreDir: dir, MaxBytes: 32 << 20, MaxAge: 3600e9})
	info, err := l.conn.cur().events.Info(testkit.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.MaxBytes != 32<<20 || info.Config.MaxAge != 3600e9 || info.Config.Duplicates != DuplicateWindow {
		t.Errorf("stream config = bytes %d age %s dup %s, want the reopened options",
			info.Config.MaxBytes, info.Config.MaxAge, info.Config.Duplicates)
	}
}

// max_bytes -1 means no size limit on the events stream, not the default.
func TestUnlimitedMaxBytes(t *testing.T) {
	l := openTest(t, Options{StoreDir: t.TempDir(), MaxBytes: -1})
	info, err := l.conn.cur().events.Info(testkit.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.MaxBytes != -1 {
		t.Errorf("stream MaxBytes = %d, want -1 (unlimited)", info.Config.MaxBytes)
	}
}
