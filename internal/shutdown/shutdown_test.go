package shutdown

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A SIGTERM to the process closes Signalled.
func TestSIGTERMClosesSignalled(t *testing.T) {
	NotifyOnSignals()
	select {
	case <-Signalled():
		t.Fatal("signalled before any signal")
	default:
	}
	require.NoError(t, syscall.Kill(syscall.Getpid(), syscall.SIGTERM))
	select {
	case <-Signalled():
	case <-time.After(10 * time.Second):
		t.Fatal("SIGTERM did not close Signalled")
	}
	Trigger() // idempotent
}
