//go:build unix

package emulator

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockFile is the lock a running emulator holds on its data directory.
const lockFile = "emulator.lock"

// lockDataDir takes an exclusive, non-blocking flock on the data directory's lock file: two
// emulators appending to one journal would hand out the same transaction ids and lose each
// other's records. The kernel drops the lock when the process ends, a kill -9 included, so
// a stale lock file never blocks a restart. The returned func releases the lock.
func lockDataDir(dir string) (func() error, error) {
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the lock file %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("the data directory is in use by another emulator (it holds %s): stop it or give this one its own --data-dir", path)
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return f.Close, nil
}
