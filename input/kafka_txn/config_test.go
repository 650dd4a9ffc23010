package kafka_txn

import (
	"os"
	"strings"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/docgen"
)

func TestConfigLintAndValidation(t *testing.T) {
	linter := service.NewEnvironment().NewComponentConfigLinter()
	base := `kafka_txn:
  seed_brokers: [ "localhost:9092" ]
  topics: [ cdc ]
  consumer_group: g
`
	for _, tc := range []struct {
		name, extra, lint string
	}{
		{"defaults", "", ""},
		{"revoke_timeout equal to rebalance_timeout", "  revoke_timeout: 60s\n", "revoke_timeout (1m0s) must be below rebalance_timeout (1m0s)"},
		{"short rebalance_timeout", "  rebalance_timeout: 10s\n", "revoke_timeout (30s) must be below rebalance_timeout (10s)"},
		{"both set and fine", "  revoke_timeout: 5s\n  rebalance_timeout: 10s\n", ""},
		{"heartbeat_interval equal to session_timeout", "  heartbeat_interval: 45s\n", "heartbeat_interval (45s) must be below half of session_timeout (45s)"},
		{"heartbeat_interval below session_timeout", "  heartbeat_interval: 10s\n  session_timeout: 30s\n", ""},
		{"checkpoint_limit zero", "  checkpoint_limit: 0\n", "checkpoint_limit must be at least 1"},
		{"unknown isolation level", "  isolation_level: serializable\n", "serializable"},
		{"bad sasl mechanism", "  sasl:\n    - mechanism: GSSAPI\n      username: u\n", "GSSAPI"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lints, err := linter.LintInputYAML([]byte(base + tc.extra))
			require.NoError(t, err)
			if tc.lint == "" {
				assert.Empty(t, lints)
				return
			}
			var all []string
			for _, l := range lints {
				all = append(all, l.Error())
			}
			assert.Contains(t, strings.Join(all, "\n"), tc.lint)
		})
	}

	t.Run("constructor enforces the same rules", func(t *testing.T) {
		const required = "topics: [ cdc ]\nconsumer_group: g\n"
		const brokers = "seed_brokers: [ localhost:9092 ]\n"
		for _, tc := range []struct{ yaml, want string }{
			{brokers + required + "revoke_timeout: 60s\n", "revoke_timeout (1m0s) must be below rebalance_timeout (1m0s)"},
			{brokers + required + "checkpoint_limit: 0\n", "checkpoint_limit must be at least 1"},
			{brokers + required + "fetch_max_partition_bytes: lots\n", "fetch_max_partition_bytes"},
			{"seed_brokers: [ \" , \" ]\n" + required, "seed_brokers must name at least one broker"},
			{brokers + required + "sasl:\n  - mechanism: PLAIN\n", "sasl[0].username must not be empty"},
			{brokers + required + "commit_period: 0s\n", "commit_period must be positive"},
			{brokers + required + "batching:\n  count: 3\n  check: 'this.'\n", "batching"},
		} {
			conf, err := ConfigSpec().ParseYAML(tc.yaml, nil)
			if err == nil {
				_, err = New(conf, service.MockResources())
			}
			require.Error(t, err, tc.yaml)
			assert.Contains(t, err.Error(), tc.want)
		}
	})
}

// TestTopicsEntriesAreSplitOnCommas: as in debezium_txn and Benthos's own
// Kafka inputs, a topics entry may hold several comma-separated topics.
func TestTopicsEntriesAreSplitOnCommas(t *testing.T) {
	conf, err := ConfigSpec().ParseYAML("seed_brokers: [ b:9092 ]\nconsumer_group: g\ntopics: [ 'cdc, cdc2', cdc3 ]\n", nil)
	require.NoError(t, err)
	c, err := inputConfigFromParsed(conf)
	require.NoError(t, err)
	assert.Equal(t, []string{"cdc", "cdc2", "cdc3"}, c.Topics)
}

// TestLintSaysWhatStartSays: every value the constructor refuses is a lint
// error with the same text, so `lint` catches what the start would.
func TestLintSaysWhatStartSays(t *testing.T) {
	linter := service.NewEnvironment().NewComponentConfigLinter()
	const required = "topics: [ cdc ]\nconsumer_group: g\n"
	const brokers = "seed_brokers: [ localhost:9092 ]\n"
	for _, yaml := range []string{
		"seed_brokers: []\n" + required,
		"seed_brokers: [ \" , \" ]\n" + required,
		"seed_brokers: [ \"user:pw@b:9092\" ]\n" + required,
		brokers + required + "commit_period: 1\n",
		brokers + required + "checkpoint_stall_timeout: soon\n",
		brokers + required + "session_timeout: 0s\n",
		brokers + required + "heartbeat_interval: -3s\n",
		brokers + required + "fetch_max_wait: 500\n",
		brokers + required + "checkpoint_limit: 0\n",
		brokers + required + "checkpoint_limit: -5\n",
		brokers + required + "fetch_max_partition_bytes: lots\n",
		brokers + required + "fetch_max_partition_bytes: 2GiB\n",
		brokers + required + "metadata_max_age: 2h\n",
		brokers + required + "metadata_max_age: 0s\n",
		brokers + required + "revoke_timeout: 60s\n",
		brokers + required + "revoke_timeout: 90s\nrebalance_timeout: 1m30s\n",
		brokers + required + "revoke_timeout: 1500ms\nrebalance_timeout: 1s\n",
		brokers + required + "revoke_timeout: 2h\nrebalance_timeout: 1h59m59.5s\n",
		brokers + required + "heartbeat_interval: 45s\n",
		brokers + required + "session_timeout: 2s\n",
		brokers + required + "session_timeout: 10s\nheartbeat_interval: 1m\n",
		"seed_brokers: [ \"b:99999\" ]\n" + required,
		"seed_brokers: [ \"b:0\" ]\n" + required,
		"seed_brokers: [ \"a:9092,b:x\" ]\n" + required,
		"seed_brokers: [ \"[::1]:70000\" ]\n" + required,
	} {
		var lintText []string
		lints, err := linter.LintInputYAML([]byte("kafka_txn:\n" + indent(yaml)))
		require.NoError(t, err)
		for _, l := range lints {
			lintText = append(lintText, l.What)
		}
		conf, err := ConfigSpec().ParseYAML(yaml, nil)
		require.NoError(t, err, yaml)
		_, startErr := New(conf, service.MockResources())
		require.Error(t, startErr, yaml)
		require.Len(t, lintText, 1, "%s: %v", yaml, lintText)
		assert.Equal(t, startErr.Error(), lintText[0], yaml)
	}
}

// TestReadmeDocumentsEveryField lints the README's full configuration block
// and checks that the field table names every field of the spec.
func TestReadmeDocumentsEveryField(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	require.NoError(t, err)
	problems, err := docgen.ReadmeProblems(service.NewEnvironment(), "input", Name, string(raw), nil)
	require.NoError(t, err)
	assert.Empty(t, problems)
}

// TestEveryFieldHasAnExample: each field this project defines shows an
// example in the docs. The children of the tls and batching blocks are
// Benthos's own (its TLS and batch policy fields) and cannot take one.
func TestEveryFieldHasAnExample(t *testing.T) {
	spec, ok := service.NewEnvironment().GetInputConfig(Name)
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
