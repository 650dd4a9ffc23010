package starrocks_test

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"

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

// The emulator's MySQL port given as a load URL, with http:// and with
// https://: a definite failure that says it is the MySQL port and names the
// HTTP port to use (net/http alone says `malformed HTTP response
// "]\x00\x00\x00"`, which was retried forever).
func TestProbeOfTheMySQLPortAsALoadURL(t *testing.T) {
	e, err := emulator.Start(emulator.Config{HTTPAddr: "127.0.0.1:0", MySQLAddr: "127.0.0.1:0", User: "loader", Password: "pw"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	for _, scheme := range []string{"http://", "https://"} {
		t.Run(scheme, func(t *testing.T) {
			c, err := starrocks.New(starrocks.Config{LoadURLs: []string{scheme + e.MySQLAddr()}, Username: "loader", Password: "pw",
				TLS: &tls.Config{InsecureSkipVerify: true}})
			require.NoError(t, err)
			t.Cleanup(c.Close)
			// net/http fails such a request in more than one way (the
			// greeting may be read before the request is written): every
			// probe tells the same.
			for range 10 {
				r := c.Probe(context.Background(), "shop")
				d := r.Definite()
				require.NotNil(t, d, "%+v", r.Failed)
				assert.Equal(t, starrocks.CauseWrongPort, d.Cause, "%v", d)
				assert.Contains(t, d.Error(), "answers with the MySQL protocol: it is the FE's MySQL port (query_port, 9030 by default); load_urls take the FE's HTTP port (http_port, 8030 by default)")
			}
		})
	}
	t.Run("mysql_address at the HTTP port", func(t *testing.T) {
		m, err := starrocks.OpenMetaWith(starrocks.MetaConfig{Addr: strings.TrimPrefix(e.FEURL(), "http://"), User: "loader", Password: "pw", Timeout: 500 * time.Millisecond})
		require.NoError(t, err)
		t.Cleanup(func() { _ = m.Close() })
		got := m.Probe(context.Background(), "shop")
		require.NotNil(t, got)
		assert.Equal(t, starrocks.CauseWrongPort, got.Cause, "%v", got)
		assert.Contains(t, got.Error(), "it is the FE's HTTP port (http_port, 8030 by default), not its MySQL port")
	})
}
