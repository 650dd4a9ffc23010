package main

import (
	"context"
	"io"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/commands/inspect"
)

// A mysql_address written with credentials (a DSN habit) is refused without
// the lint error repeating the password into the log.
func TestMySQLAddressLintDoesNotEchoThePassword(t *testing.T) {
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
		assert.Contains(t, err.Error(), "credentials are not allowed in mysql_address; set username and password", addr)
	}
}

// inspect --mysql user:password@host:port is refused before any dial (the
// driver's dial error would quote the whole text, password included).
func TestInspectRefusesCredentialsInMySQLAddress(t *testing.T) {
	err := inspect.Run(context.Background(), inspect.Options{MySQL: "root:hunter2@127.0.0.1:1", User: "root", PipelineID: "p"}, false, io.Discard)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "hunter2")
	assert.Contains(t, err.Error(), "credentials are not allowed in --mysql; set --user and --password")
}
