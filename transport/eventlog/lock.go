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

// release closes the file, which releases the lock once no descriptor of
// it is left: a server process that inherited one (and is stuck ending)
// keeps the store locked until it is gone. The file stays: removing it
// would let a process that opened the old file and one that creates a new
// one both believe they hold the lock.
func (l *dirLock) release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	if err != nil {
		return fmt.Errorf("release the lock of events.store_dir: %w", err)
	}
	return nil
}

// inheritedLockFD is the descriptor a server process gets its router's
// store lock on (Process: ExtraFiles' first).
const inheritedLockFD = 3

// holdsLock returns an error unless fd is dir's lock file and holds its
// lock: the lock a router took and handed down to its server process (or,
// for a process started by hand on that file, the lock it now takes), so
// no other airouter serves the store meanwhile.
func holdsLock(dir string, fd int) error {
	path := filepath.Join(dir, lockName)
	var got, want unix.Stat_t
	if err := unix.Fstat(fd, &got); err != nil {
		return fmt.Errorf("no store lock on descriptor %d (%s runs only as a router's child): %w", fd, ProcessArg, err)
	}
	if err := unix.Stat(path, &want); err != nil {
		return fmt.Errorf("read the store's lock file: %w", err)
	}
	if got.Dev != want.Dev || got.Ino != want.Ino {
		return fmt.Errorf("descriptor %d is not %s (%s runs only as a router's child)", fd, path, ProcessArg)
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return fmt.Errorf("events.store_dir %q is locked by another airouter: %w", dir, ErrStoreInUse)
	}
	return nil
}
