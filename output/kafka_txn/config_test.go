package kafka_txn

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConfigLintAndValidation: every value the constructor refuses is a
// lint error with the same text.
func TestConfigLintAndValidation(t *testing.T) {
	linter := service.NewEnvironment().NewComponentConfigLinter()
	const base = "seed_brokers: [ localhost:9092 ]\ntopic: dlq\n"
	for _, tc := range []struct{ name, extra, want string }{
		{"defaults", "", ""},
		{"everything set", "key: ${! @k }\npartitioner: manual\npartition: ${! @p }\ntransactional_id: t\nmetadata:\n  include_patterns: [ \"^starrocks_\" ]\nmax_in_flight: 4\ntimeout: 30s\nmax_message_bytes: 2MiB\ncompression: zstd\n", ""},
		{"manual without partition", "partitioner: manual\n", "partition must be set when partitioner is manual"},
		{"partition without manual", "partition: \"0\"\n", "partition is only used with partitioner: manual"},
		{"transactions need idempotence", "transactional_id: t\nidempotent_write: false\n", "transactional_id needs idempotent_write: true"},
		{"max_in_flight zero", "max_in_flight: 0\n", "max_in_flight must be at least 1, got 0"},
		{"timeout without unit", "timeout: 10\n", `timeout must be a duration with a unit (e.g. 500ms, 30s, 2m), got "10"`},
		{"timeout zero", "timeout: 0s\n", `timeout must be positive, got "0s"`},
		{"max_message_bytes", "max_message_bytes: lots\n", `max_message_bytes must be a positive byte size such as 1048576, 512KiB, 1MiB or 2MB (at most 1GiB), got "lots"`},
		{"seed_brokers empty", "seed_brokers: []\n", "seed_brokers must name at least one broker"},
		{"bad partitioner", "partitioner: sticky\n", "sticky"},
		{"bad compression", "compression: brotli\n", "brotli"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yaml := base + tc.extra
			if strings.HasPrefix(tc.extra, "seed_brokers") {
				yaml = "topic: dlq\n" + tc.extra
			}
			lints, err := linter.LintOutputYAML([]byte("kafka_txn:\n" + indent(yaml)))
			require.NoError(t, err)
			var lintText []string
			for _, l := range lints {
				lintText = append(lintText, l.What)
			}
			conf, perr := ConfigSpec().ParseYAML(yaml, nil)
			var startErr error
			if perr != nil {
				startErr = perr
			} else {
				_, startErr = outputConfigFromParsed(conf)
			}
			if tc.want == "" {
				assert.Empty(t, lintText)
				assert.NoError(t, startErr)
				return
			}
			assert.Contains(t, strings.Join(lintText, "\n"), tc.want)
			require.Error(t, startErr)
			assert.Contains(t, startErr.Error(), tc.want, "the constructor says what lint says")
		})
	}
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}

// TestConnectErrors: an unreachable cluster and a missing topic (without
// interpolation) fail Connect with an error naming the field to fix.
func TestConnectErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	build := func(yaml string) *Output {
		conf, err := ConfigSpec().ParseYAML(yaml, nil)
		require.NoError(t, err)
		c, err := outputConfigFromParsed(conf)
		require.NoError(t, err)
		return newOutput(c, service.MockResources())
	}
	err := build("seed_brokers: [ \"127.0.0.1:1\" ]\ntopic: dlq\n").Connect(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "seed_brokers [127.0.0.1:1] are unreachable")

	c := newCluster(t, 1, 1)
	o := build("seed_brokers: [ \"" + c.ListenAddrs()[0] + "\" ]\ntopic: nope\n")
	err = o.Connect(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `topics ["nope"] do not exist`)
	assert.Contains(t, err.Error(), "fix topic")

	// An interpolated topic is not checked: it is known per message.
	o = build("seed_brokers: [ \"" + c.ListenAddrs()[0] + "\" ]\ntopic: ${! @t }\n")
	require.NoError(t, o.Connect(ctx))
	require.NoError(t, o.Close(ctx))
	assert.ErrorIs(t, o.WriteBatch(ctx, batchOf([]string{"x"}, nil)), service.ErrNotConnected)
}

// TestEveryFieldHasAnExample: each field this project defines shows an
// example in the docs. The children of the tls and batching blocks are
// Benthos's own (its TLS and batch policy fields) and cannot take one.
func TestEveryFieldHasAnExample(t *testing.T) {
	spec, ok := service.NewEnvironment().GetOutputConfig(Name)
	require.True(t, ok)
	data, err := spec.TemplateData()
	require.NoError(t, err)
	var missing []string
	for _, f := range data.Fields {
		if len(f.Examples) == 0 && !strings.HasPrefix(f.FullName, "tls.") && !strings.HasPrefix(f.FullName, "batching.") {
			missing = append(missing, f.FullName)
		}
	}
	assert.Empty(t, missing, "fields without an example")
}
