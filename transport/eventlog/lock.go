package eventlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrStoreInUse is wrapped by Open's error when another airouter holds the
// store directory.
var ErrStoreInUse = errors.New("store directory is in use")

const lockName = "airouter.lock"

// dirLock is an exclusive flock on <dir>/airouter.lock. nats-server has no
// lock of its own, and two servers on one directory silently lose
// acknowledged messages. The kernel releases the lock when the process
// dies, so a crash never leaves a stale lock.
type dirLock struct {
	f *os.File
}

func lockDir(dir string) (*dirLock, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create events.store_dir %q: %w", dir, err)
	}
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock file %q: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder := readHolder(f)
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("events.store_dir %q is in use by another airouter (%s): %w", dir, holder, ErrStoreInUse)
		}
		return nil, fmt.Errorf("lock events.store_dir %q: %w", dir, err)
	}
	pid := strconv.Itoa(os.Getpid()) + "\n"
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(pid), 0)
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("write lock file %q: %w", path, err)
	}
	return &dirLock{f: f}, nil
}

func readHolder(f *os.File) string {
	buf := make([]byte, 32)
	n, _ := f.ReadAt(buf, 0)
	pid := strings.TrimSpace(string(buf[:n]))
	if _, err := strconv.Atoi(pid); err != nil {
		return "pid unknown"
	}
	return "pid " + pid
}

// release unlocks and closes the file. The file stays: removing it would
// let a process that opened the old file and one that creates a new one both
// believe they hold the lock.
func (l *dirLock) release() error {
	if l == nil || l.f == nil {
		return nil
	}
	uerr := unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	cerr := l.f.Close()
	l.f = nil
	if uerr != nil {
		return fmt.Errorf("unlock events.store_dir: %w", uerr)
	}
	return cerr
}

// checkLocked returns an error unless another open file holds dir's lock:
// a router's server process serves only the store its router locked.
func checkLocked(dir string) error {
	f, err := os.Open(filepath.Join(dir, lockName))
	if err != nil {
		return fmt.Errorf("open the store's lock file: %w", err)
	}
	defer f.Close()
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if err == nil {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		return fmt.Errorf("events.store_dir %q is not locked by a router (%s runs only as a router's child)", dir, ProcessArg)
	}
	if !errors.Is(err, unix.EWOULDBLOCK) {
		return fmt.Errorf("check the lock of events.store_dir %q: %w", dir, err)
	}
	return nil
}
