package main

import (
	"context"
	"io"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/cli/inspect"
)

// A mysql_address written with credentials (a DSN habit) is refused, but the
// lint error repeats the password into the log.
func TestRev16MySQLAddressLintDoesNotEchoThePassword(t *testing.T) {
	for _, addr := range []string{"root:hunter2@127.0.0.1:9030", "mysql://root:hunter2@127.0.0.1:9030", "root:hunter2@tcp(127.0.0.1:9030)/"} {
		b := service.NewStreamBuilder()
		err := b.SetYAML(`
input:
  stdin: {}
output:
  starrocks_txn:
    load_urls: [ "http://127.0.0.1:8030" ]
    mysql_address: "` + addr + `"
`)
		require.Error(t, err, addr)
		assert.NotContains(t, err.Error(), "hunter2", "lint error for %s", addr)
	}
}

// inspect --mysql user:password@host:port: the error names the address
// redacted, then the dial error repeats it whole.
func TestRev16InspectErrorDoesNotEchoThePassword(t *testing.T) {
	err := inspect.Run(context.Background(), inspect.Options{MySQL: "root:hunter2@127.0.0.1:1", User: "root", PipelineID: "p"}, false, io.Discard)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "hunter2")
}
