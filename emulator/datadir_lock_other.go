//go:build !unix

package emulator

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// lockFile is the lock a running emulator holds on its data directory.
const lockFile = "emulator.lock"

// lockDataDir makes the data directory exclusive where flock does not exist: the lock file
// is created with O_EXCL and removed on Close. A process killed without closing leaves it
// behind; the error says to remove it then. The returned func releases the lock.
func lockDataDir(dir string) (func() error, error) {
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("the data directory is in use by another emulator (%s exists): stop it or give this one its own --data-dir; remove the file if no emulator runs there", path)
	}
	if err != nil {
		return nil, fmt.Errorf("creating the lock file %s: %w", path, err)
	}
	return func() error { return errors.Join(f.Close(), os.Remove(path)) }, nil
}
