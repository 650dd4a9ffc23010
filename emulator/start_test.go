package emulator

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/testkit"
)

func freeAddr(t *testing.T) string { return testkit.FreeAddr(t) }

// TestStartPortTaken: whichever listener's port is taken, Start returns
// the listen error naming the address, never panics, and leaves no
// listener of its own open.
func TestStartPortTaken(t *testing.T) {
	t.Parallel()
	for _, which := range []string{"fe", "be", "mysql"} {
		t.Run(which, func(t *testing.T) {
			taken, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			defer taken.Close()
			cfg := Config{HTTPAddr: freeAddr(t), BEAddr: freeAddr(t), MySQLAddr: freeAddr(t), Schema: "CREATE DATABASE d"}
			switch which {
			case "fe":
				cfg.HTTPAddr = taken.Addr().String()
			case "be":
				cfg.BEAddr = taken.Addr().String()
			default:
				cfg.MySQLAddr = taken.Addr().String()
			}
			var e *Emulator
			require.NotPanics(t, func() { e, err = Start(cfg) })
			require.Error(t, err)
			assert.Nil(t, e)
			assert.Contains(t, err.Error(), "listen tcp "+taken.Addr().String()+": bind: address already in use")
			for _, addr := range []string{cfg.HTTPAddr, cfg.BEAddr, cfg.MySQLAddr} {
				if addr == taken.Addr().String() {
					continue
				}
				ln, err := net.Listen("tcp", addr)
				require.NoError(t, err, "Start closed its listener on %s", addr)
				_ = ln.Close()
			}
		})
	}
	t.Run("bad schema", func(t *testing.T) {
		var err error
		require.NotPanics(t, func() { _, err = Start(Config{HTTPAddr: "127.0.0.1:0", Schema: "CREATE TABLE"}) })
		assert.ErrorContains(t, err, "running the schema script")
	})
}
