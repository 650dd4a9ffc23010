package debezium_txn

import (
	"os"
	"strings"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/docgen"
)

const minimalYAML = `
seed_brokers: [ "localhost:9092" ]
topics: [ "dbserver1.inventory.orders" ]
transaction_topic: dbserver1.transaction
consumer_group: g
`

func parse(t *testing.T, yaml string) (inputConfig, error) {
	t.Helper()
	conf, err := ConfigSpec().ParseYAML(yaml, nil)
	if err != nil {
		return inputConfig{}, err
	}
	return inputConfigFromParsed(conf)
}

// The spec's defaults, the derived topic prefix, the mapping of collections
// to topics and the validation of every field.
func TestConfigParsing(t *testing.T) {
	c, err := parse(t, minimalYAML)
	require.NoError(t, err)
	assert.Equal(t, "dbserver1", c.topicPrefix)
	assert.Equal(t, "dbserver1.inventory.orders", c.topicOf("inventory.orders"))
	assert.True(t, c.consumes("dbserver1.inventory.orders"))
	assert.False(t, c.consumes("dbserver1.inventory.audit"))
	assert.False(t, c.consumes("dbserver1.transaction"))
	assert.Equal(t, int64(256<<20), c.maxBufferedBytes)
	assert.Nil(t, c.database, "no database: the event's source decides")
	assert.True(t, c.ReadCommitted)

	c, err = parse(t, minimalYAML+"collection_topics: { inventory.orders_2025: orders }\ntopics: [ 'orders, dbserver1.inventory.items' ]\ndatabase: \"\"\n")
	require.NoError(t, err)
	assert.Equal(t, "orders", c.topicOf("inventory.orders_2025"))
	assert.Equal(t, []string{"orders", "dbserver1.inventory.items"}, c.Topics, "comma-separated entries are split")
	assert.Nil(t, c.database, "an empty database is none")

	c, err = parse(t, minimalYAML+"skip_transactions: [ 'g:81', 'g:82' ]\n")
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"g:81": true, "g:82": true}, c.skipTransactions)
	assert.Empty(t, mustParse(t).skipTransactions, "none by default")

	c, err = parse(t, minimalYAML+"regexp_topics: true\ntopics: [ '^dbserver1\\.inventory\\.[^.]+$' ]\n")
	require.NoError(t, err)
	assert.True(t, c.consumes("dbserver1.inventory.anything"))
	assert.False(t, c.consumes("dbserver1.transaction"), "the transaction topic is never a data topic")

	for _, bad := range []struct{ yaml, want string }{
		{strings.Replace(minimalYAML, "dbserver1.transaction", "tx", 1), "topic_prefix"},
		{minimalYAML + "regexp_topics: true\ntopics: [ '(' ]\n", "regular expression"},
		{minimalYAML + "timezone: Mars/Olympus\n", "timezone"},
		{minimalYAML + "max_buffered_bytes: lots\n", "max_buffered_bytes"},
		{minimalYAML + "checkpoint_limit: 0\n", "checkpoint_limit"},
		{minimalYAML + "resend_window: 0\n", "resend_window"},
		{minimalYAML + "revoke_timeout: 90s\n", "revoke_timeout"},
		{minimalYAML + "topics: [ dbserver1.transaction ]\n", "must not be listed in topics"},
		{minimalYAML + "commit_period: 0s\n", "commit_period"},
		{strings.Replace(minimalYAML, `"localhost:9092"`, `"user:pw@host:9092"`, 1), "credentials"},
	} {
		_, err := parse(t, bad.yaml)
		require.ErrorContains(t, err, bad.want, bad.yaml)
	}
}

// The spec's lint rules fire in a full config.
func TestLintRules(t *testing.T) {
	lint := func(extra string) []service.Lint {
		indented := strings.ReplaceAll(strings.TrimPrefix(minimalYAML+extra, "\n"), "\n", "\n    ")
		lints, err := service.GlobalEnvironment().FullConfigSchema("", "").NewStreamConfigLinter().
			LintYAML([]byte("input:\n  debezium_txn:\n    " + indented + "\noutput:\n  drop: {}\n"))
		require.NoError(t, err)
		return lints
	}
	assert.Empty(t, lint(""))
	assert.NotEmpty(t, lint("revoke_timeout: 90s\n"))
	assert.NotEmpty(t, lint("topics: [ dbserver1.transaction ]\n"))
	assert.NotEmpty(t, lint("checkpoint_limit: 0\n"))
	assert.NotEmpty(t, lint("on_truncate: ignore\n"))
}

// Every value of the shared consumer fields that the start refuses is a
// lint error with the same text under debezium_txn, as under kafka_txn (the
// fields are internal/kafka/consumer's): before, `lint` took
// `commit_period: 0s` and `fetch_max_partition_bytes: "4 parsecs"` here.
func TestLintSaysWhatStartSays(t *testing.T) {
	for _, extra := range []string{
		"commit_period: 0s\n",
		"fetch_max_partition_bytes: \"4 parsecs\"\n",
		"fetch_max_partition_bytes: 2GiB\n",
		"revoke_timeout: soon\n",
		"session_timeout: 0s\n",
		"rebalance_timeout: 1\n",
		"heartbeat_interval: 3\n",
		"fetch_max_wait: 500\n",
		"metadata_max_age: 0s\n",
		"metadata_max_age: 2h\n",
		"missing_events_timeout: soon\n",
		"checkpoint_limit: 0\n",
		"resend_window: -1\n",
		"revoke_timeout: 90s\n",
	} {
		indented := strings.ReplaceAll(strings.TrimPrefix(minimalYAML+extra, "\n"), "\n", "\n    ")
		lints, err := service.GlobalEnvironment().FullConfigSchema("", "").NewStreamConfigLinter().
			LintYAML([]byte("input:\n  debezium_txn:\n    " + indented + "\noutput:\n  drop: {}\n"))
		require.NoError(t, err)
		var texts []string
		for _, l := range lints {
			texts = append(texts, l.What)
		}
		_, startErr := parse(t, minimalYAML+extra)
		require.Error(t, startErr, extra)
		require.Len(t, texts, 1, "%s: %v", extra, texts)
		assert.Equal(t, startErr.Error(), texts[0], extra)
	}
}

// The guide's configuration block lints and names every field, and its
// field table has a row for each.
func TestReadmeDocumentsEveryField(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	require.NoError(t, err)
	problems, err := docgen.ReadmeProblems(service.GlobalEnvironment(), "input", Name, string(raw), nil)
	require.NoError(t, err)
	assert.Empty(t, problems)
}

func mustParse(t *testing.T) inputConfig {
	t.Helper()
	c, err := parse(t, minimalYAML)
	require.NoError(t, err)
	return c
}
