package starrocks_test

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// The probes against the emulator, over HTTP and over the MySQL port:
// healthy, refused credentials, a database that does not exist, a port
// nothing listens on.
func TestProbeAgainstTheEmulator(t *testing.T) {
	e, err := emulator.Start(emulator.Config{HTTPAddr: "127.0.0.1:0", MySQLAddr: "127.0.0.1:0", User: "loader", Password: "pw",
		Schema: "CREATE DATABASE shop;"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	ctx := context.Background()
	client := func(pass string) *starrocks.Client {
		c, err := starrocks.New(starrocks.Config{LoadURLs: []string{e.FEURL()}, Username: "loader", Password: pass})
		require.NoError(t, err)
		t.Cleanup(c.Close)
		return c
	}
	meta := func(addr, pass string) *starrocks.Meta {
		m, err := starrocks.OpenMeta(addr, "loader", pass)
		require.NoError(t, err)
		t.Cleanup(func() { _ = m.Close() })
		return m
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	nothing := l.Addr().String()
	require.NoError(t, l.Close())

	t.Run("http", func(t *testing.T) {
		r := client("pw").Probe(ctx, "shop")
		assert.Equal(t, []string{e.FEURL()}, r.OK)
		assert.Empty(t, r.Failed)
		assert.Empty(t, client("pw").Probe(ctx, "").Failed, "without a database only the FE and the credentials are checked")

		r = client("wrong").Probe(ctx, "shop")
		require.Len(t, r.Failed, 1)
		assert.Equal(t, starrocks.CauseAuth, r.Failed[0].Cause, "%v", r.Failed[0])
		assert.NotContains(t, r.Failed[0].Error(), "wrong")

		r = client("pw").Probe(ctx, "nodb")
		require.Len(t, r.Failed, 1)
		assert.Equal(t, starrocks.CauseNoDatabase, r.Failed[0].Cause, "%v", r.Failed[0])
		assert.Contains(t, r.Failed[0].Error(), "nodb")
	})
	t.Run("mysql", func(t *testing.T) {
		assert.Nil(t, meta(e.MySQLAddr(), "pw").Probe(ctx, "shop"))
		assert.Nil(t, meta(e.MySQLAddr(), "pw").Probe(ctx, ""))

		got := meta(e.MySQLAddr(), "wrong").Probe(ctx, "shop")
		require.NotNil(t, got)
		assert.Equal(t, starrocks.CauseAuth, got.Cause, "%v", got)

		got = meta(e.MySQLAddr(), "pw").Probe(ctx, "nodb")
		require.NotNil(t, got)
		assert.Equal(t, starrocks.CauseNoDatabase, got.Cause, "%v", got)

		got = meta(nothing, "pw").Probe(ctx, "shop")
		require.NotNil(t, got)
		assert.Equal(t, starrocks.CauseUnreachable, got.Cause, "%v", got)
		assert.Contains(t, got.Error(), nothing)
	})
}
