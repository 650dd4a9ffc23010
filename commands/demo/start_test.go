package demo

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStartReportsATakenPort: a port already in use is a clear error that
// names it, not a panic in the cleanup of the half-started demo.
func TestStartReportsATakenPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	for _, o := range []Options{
		{MySQLAddr: taken.Addr().String()},
		{HTTPAddr: taken.Addr().String()},
	} {
		var r *Running
		require.NotPanics(t, func() { r, err = Start(context.Background(), o) })
		assert.Nil(t, r)
		require.Error(t, err)
		assert.Equal(t, "starting the emulator: listen tcp "+taken.Addr().String()+": bind: address already in use", err.Error())
	}
}
