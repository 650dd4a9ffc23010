package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/cli/lint"
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
