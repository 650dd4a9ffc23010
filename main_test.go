package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/commands/lint"
	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/testkit/emurig"
)

const misplaced = `
http:
  enabled: false
input:
  stdin: {}
pipeline:
  processors:
    - txn_assembler:
        format: envelope
output:
  drop: {}
logger:
  level: none
`

// The binary refuses to start a misplaced txn_assembler, with lint's text.
func TestStartRefusesMisplacedAssembler(t *testing.T) {
	path := filepath.Join(t.TempDir(), "misplaced.yaml")
	require.NoError(t, os.WriteFile(path, []byte(misplaced), 0o644))
	code, err := service.RunCLIToCode(context.Background(),
		append(options(), service.CLIOptSetArgs("benthos-starrocks", "-c", path))...)
	assert.Equal(t, 1, code)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "pipeline.processors.0: txn_assembler must see every partition's messages in order")
	assert.Contains(t, err.Error(), "pipeline.threads is -1")
}

// `lint` runs Benthos's lint and the placement check: a file with only a
// placement problem fails, a file Benthos refuses fails, a good one passes.
func TestLintCommand(t *testing.T) {
	dir := t.TempDir()
	write := func(name, conf string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(conf), 0o644))
		return p
	}
	bad := write("misplaced.yaml", misplaced)
	unknown := write("unknown.yaml", "input:\n  stdin: {}\n  no_such_field: 1\noutput:\n  drop: {}\n")
	good := write("good.yaml", "input:\n  stdin: {}\n  processors:\n    - txn_assembler: {}\noutput:\n  drop: {}\n")

	var stderr bytes.Buffer
	assert.Equal(t, 1, lint.Run([]string{bad}, &stderr, benthosLint))
	assert.Contains(t, stderr.String(), bad+"(8,7) pipeline.processors.0: txn_assembler must see")
	stderr.Reset()
	assert.Equal(t, 1, lint.Run([]string{unknown}, &stderr, benthosLint), "Benthos's own lint errors still fail")
	assert.Empty(t, stderr.String(), "and are printed by Benthos, not repeated")
	assert.Equal(t, 0, lint.Run([]string{good}, &stderr, benthosLint))
	assert.Empty(t, stderr.String())
}

// A pipeline whose starrocks_txn output cannot start because of an error no
// retry fixes (here a refused password) stops, and the binary exits with
// status 1, not the 0 of a pipeline that finished.
func TestDefiniteStarRocksErrorExitsWithStatus1(t *testing.T) {
	e := emurig.Start(t, emulator.Config{User: "loader", Password: "pw"})
	dir := t.TempDir()
	path, logPath := filepath.Join(dir, "pipeline.yaml"), filepath.Join(dir, "log.txt")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`
http:
  enabled: false
input:
  generate:
    interval: 50ms
    mapping: 'root = {"id": 1}'
output:
  starrocks_txn:
    schema_evolution: ignore
    load_urls: [ %q ]
    username: loader
    password: wrong
logger:
  level: error
  file: { path: %q, rotate: false }
`, e.FEURL(), logPath)), 0o644))
	assert.Equal(t, 1, runCLI(context.Background(), service.CLIOptSetArgs("benthos-starrocks", "-c", path)))
	logs, err := os.ReadFile(logPath)
	require.NoError(t, err)
	assert.Contains(t, string(logs), "The starrocks_txn output stops, and the pipeline with it")
	assert.Contains(t, string(logs), "check username and password")
}

// The binary has the inspect subcommand (an unknown one exits 1).
func TestInspectIsASubcommand(t *testing.T) {
	assert.Equal(t, 1, runCLI(context.Background(), append(commands(), service.CLIOptSetArgs("benthos-starrocks", "no-such-command"))...))
	assert.Equal(t, 0, runCLI(context.Background(), append(commands(), service.CLIOptSetArgs("benthos-starrocks", "inspect", "--help"))...))
}

// A pipeline whose Kafka input cannot start because of an error no retry
// fixes (here seed_brokers names an HTTP server, not a Kafka broker) stops,
// and the binary exits with status 1, the fix named in the log.
func TestDefiniteKafkaErrorExitsWithStatus1(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				buf := make([]byte, 512)
				if _, err := conn.Read(buf); err == nil {
					_, _ = conn.Write([]byte("HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n"))
				}
			}()
		}
	}()
	dir := t.TempDir()
	path, logPath := filepath.Join(dir, "pipeline.yaml"), filepath.Join(dir, "log.txt")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`
http:
  enabled: false
input:
  kafka_txn:
    seed_brokers: [ %q ]
    topics: [ cdc ]
    consumer_group: g
  processors:
    - txn_assembler: {}
output:
  drop: {}
logger:
  level: error
  file: { path: %q, rotate: false }
`, l.Addr().String(), logPath)), 0o644))
	assert.Equal(t, 1, runCLI(context.Background(), service.CLIOptSetArgs("benthos-starrocks", "-c", path)))
	logs, err := os.ReadFile(logPath)
	require.NoError(t, err)
	assert.Contains(t, string(logs), "The kafka_txn input stops, and the pipeline with it")
	assert.Contains(t, string(logs), "answered as an HTTP server, not a Kafka broker: check the port")
}
