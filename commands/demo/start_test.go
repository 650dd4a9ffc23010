package demo

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStartReportsATakenPort: a port already in use is a clear error that
// names it and the flag that moves it to a free port, not a panic in the
// cleanup of the half-started demo.
func TestStartReportsATakenPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	_, port, err := net.SplitHostPort(taken.Addr().String())
	require.NoError(t, err)
	for _, c := range []struct {
		o    Options
		flag string
	}{
		{Options{MySQLAddr: taken.Addr().String()}, "--mysql"},
		{Options{HTTPAddr: taken.Addr().String()}, "--http"},
		{Options{MySQLAddr: "localhost:" + port}, "--mysql"},
	} {
		var r *Running
		require.NotPanics(t, func() { r, err = Start(context.Background(), c.o) })
		assert.Nil(t, r)
		require.Error(t, err)
		assert.Equal(t, "starting the emulator: listen tcp "+taken.Addr().String()+": bind: address already in use; "+
			"another process listens there (a StarRocks FE, an emulator, a demo with --keep?): give "+c.flag+" 127.0.0.1:0 for a free port", err.Error())
	}
	assert.Empty(t, portHint(errors.New("starting the emulator: no schema"), Options{}), "only a taken address gets the hint")
}
