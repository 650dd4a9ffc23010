package lint

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

func TestPlacement(t *testing.T) {
	for _, tc := range []struct {
		name, conf string
		// want is a piece of the refusal, "" when the placement is right.
		want string
		line int
	}{
		{name: "input processors", conf: `
input:
  stdin: {}
  processors:
    - mapping: root = this
    - txn_assembler:
        format: envelope
`},
		{name: "input processors, empty config", conf: `
input:
  stdin: {}
  processors:
    - txn_assembler:
`},
		{name: "a broker's child input", conf: `
input:
  broker:
    inputs:
      - stdin: {}
        processors:
          - txn_assembler: {}
`},
		{name: "an input resource", conf: `
input_resources:
  - label: cdc
    stdin: {}
    processors:
      - txn_assembler: {}
`},
		{name: "pipeline with one thread", conf: `
pipeline:
  threads: 1
  processors:
    - txn_assembler: {}
`},
		{name: "pipeline threads from the environment", conf: `
pipeline:
  threads: ${THREADS:1}
  processors:
    - txn_assembler: {}
`},
		{name: "pipeline, default threads", conf: `
pipeline:
  processors:
    - txn_assembler: {}
`, want: "pipeline.processors.0: txn_assembler must see every partition's messages in order, one call at a time: put it under input.processors, or under pipeline.processors with pipeline.threads: 1; here pipeline.threads is -1 (one thread per CPU core)", line: 4},
		{name: "pipeline, threads -1 as create writes it", conf: `
pipeline:
  threads: -1
  processors:
    - txn_assembler:
        format: envelope
`, want: "pipeline.threads is -1 (one thread per CPU core), so its calls overlap", line: 5},
		{name: "pipeline, four threads", conf: `
pipeline:
  threads: 4
  processors:
    - txn_assembler: {}
`, want: "here pipeline.threads is 4, so its calls overlap"},
		{name: "an output's processors", conf: `
output:
  stdout: {}
  processors:
    - txn_assembler: {}
`, want: "output.processors.0: txn_assembler must see every partition's messages in order, one call at a time: put it under input.processors, or under pipeline.processors with pipeline.threads: 1; here it is an output's processor"},
		{name: "a broker output's child", conf: `
output:
  broker:
    outputs:
      - stdout: {}
        processors:
          - txn_assembler: {}
`, want: "output.broker.outputs.0.processors.0: "},
		{name: "a processor resource", conf: `
processor_resources:
  - label: asm
    txn_assembler: {}
`, want: "a processor resource can be used from any place"},
		{name: "inside another processor of the input", conf: `
input:
  stdin: {}
  processors:
    - branch:
        processors:
          - txn_assembler: {}
`, want: "input.processors.0.branch.processors.0: txn_assembler must see every partition's messages in order, one call at a time: put it under input.processors, or under pipeline.processors with pipeline.threads: 1; here it is inside another processor"},
		{name: "inside try in the pipeline with one thread", conf: `
pipeline:
  threads: 1
  processors:
    - try:
        - txn_assembler: {}
`, want: "pipeline.processors.0.try.0: "},
		{name: "a batching policy", conf: `
input:
  stdin: {}
  batching:
    count: 10
    processors:
      - txn_assembler: {}
`, want: "here it is a batching policy's processor"},
		{name: "unit tests are not checked", conf: `
tests:
  - name: t
    target_processors: /pipeline/processors
    txn_assembler: {}
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps, err := CheckYAML([]byte(tc.conf))
			require.NoError(t, err)
			if tc.want == "" {
				assert.Empty(t, ps)
				return
			}
			require.Len(t, ps, 1)
			assert.Contains(t, ps[0].What, tc.want)
			if tc.line > 0 {
				assert.Equal(t, tc.line, ps[0].Line)
			}

			// The check at start (a parsed config) gives the same text.
			var v any
			require.NoError(t, yaml.Unmarshal([]byte(tc.conf), &v))
			fromParsed, err := CheckAny(v)
			require.NoError(t, err)
			require.Len(t, fromParsed, 1)
			assert.Equal(t, ps[0].What, fromParsed[0].What)
		})
	}
}

func TestTargets(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a.yaml", "b.yml", "c.md", "sub/d.yaml", "sub/e.txt"} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), nil, 0o644))
	}
	j := func(f string) string { return filepath.Join(dir, f) }
	assert.Equal(t, []string{j("a.yaml")}, Targets([]string{"--deprecated", j("a.yaml")}))
	assert.ElementsMatch(t, []string{j("a.yaml"), j("b.yml"), j("sub/d.yaml")}, Targets([]string{dir + "/..."}))
	assert.Equal(t, []string{j("a.yaml")}, Targets([]string{j("*.yaml"), j("c.md")}))
	// Flag values are not targets, except the resources files, which
	// Benthos lints too.
	assert.Equal(t, []string{j("b.yml"), j("a.yaml")},
		Targets([]string{"-e", "x.env", "-r", j("b.yml"), "--templates=t/*.yaml", "--env-file", "y.env", j("a.yaml")}))
	assert.Equal(t, []string{j("b.yml")}, Targets([]string{"--resources=" + j("b.yml")}))
	assert.Equal(t, []string{"-x.yaml"}, Targets([]string{"--", "-x.yaml"}))
}

// Run reports after Benthos's lint, in its format, and fails when either
// found something.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	good := filepath.Join(dir, "good.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("pipeline:\n  processors:\n    - txn_assembler: {}\n"), 0o644))
	require.NoError(t, os.WriteFile(good, []byte("input:\n  stdin: {}\n  processors:\n    - txn_assembler: {}\n"), 0o644))

	var calls [][]string
	builtin := func(code int) Builtin {
		return func(args []string) int { calls = append(calls, args); return code }
	}
	var stderr bytes.Buffer
	assert.Equal(t, 1, Run([]string{"--deprecated", good, bad}, &stderr, builtin(0)))
	assert.Equal(t, [][]string{{"--deprecated", good, bad}}, calls, "Benthos's lint gets the command line unchanged")
	assert.Contains(t, stderr.String(), bad+"(3,7) pipeline.processors.0: txn_assembler must see")
	assert.NotContains(t, stderr.String(), good)

	stderr.Reset()
	assert.Equal(t, 0, Run([]string{good}, &stderr, builtin(0)))
	assert.Empty(t, stderr.String())
	assert.Equal(t, 1, Run([]string{good}, &stderr, builtin(1)), "Benthos's lint errors fail the command")
	assert.Equal(t, 3, Run([]string{"--help"}, &stderr, builtin(3)))
}
