package eventlog

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/airouter/airouter/domain"
)

// An acknowledged control event (ban, unban, cooldown, bench, settings) must
// survive a power loss, not only a process crash. nats-server writes a
// message to its block file before acknowledging it, so a crash keeps it,
// but it syncs the file only every two minutes (sync_interval); syncing
// every write (SyncAlways) would also sync every outcome batch. Control
// events are rare, so after each one the log syncs the events stream's
// newest block files and their directory itself: the data the server
// wrote is on disk when PublishControl returns. Outcomes and cooldowns keep
// the server's interval: a power loss may cost the last two minutes of
// them, never an acknowledged ban, unban, bench or settings change.

// durableKind reports whether a control event of kind k is synced. A
// cooldown is not: it lasts seconds (Retry-After, capped), decisions can
// publish many in a burst of 429s, and a lost one only lets a request reach
// the upstream early.
func durableKind(k domain.Kind) bool { return k != domain.KindCooldownStarted }

// syncBlocks is how many of the newest block files are synced: the control
// event is in the newest one, or in the one before when an outcome batch
// opened a new block since.
const syncBlocks = 2

// eventsMsgsDir is where the embedded server keeps the events stream's
// block files under its store directory.
func eventsMsgsDir(storeDir string) string {
	return filepath.Join(storeDir, "jetstream", "$G", "streams", EventsStream, "msgs")
}

// syncEvents syncs the newest block files of the events stream and their
// directory, and returns how many block files it synced; nothing without
// an embedded file store.
func (c *conn) syncEvents() (int, error) {
	if c.msgsDir == "" {
		return 0, nil
	}
	blks, err := filepath.Glob(filepath.Join(c.msgsDir, "*.blk"))
	if err != nil {
		return 0, err
	}
	index := func(p string) int {
		n, _ := strconv.Atoi(strings.TrimSuffix(filepath.Base(p), ".blk"))
		return n
	}
	slices.SortFunc(blks, func(a, b string) int { return index(b) - index(a) })
	blks = blks[:min(len(blks), syncBlocks)]
	for _, p := range append(blks, c.msgsDir) {
		if err := syncFile(p); err != nil {
			return 0, fmt.Errorf("sync %s: %w", p, err)
		}
	}
	return len(blks), nil
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil // a block removed by retention since
	}
	if err != nil {
		return err
	}
	serr := f.Sync()
	if cerr := f.Close(); serr == nil {
		serr = cerr
	}
	return serr
}
