package starrocks_txn

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLintRules(t *testing.T) {
	env := service.NewEnvironment()
	require.NoError(t, env.RegisterBatchOutput("starrocks_txn", outputSpec(),
		func(conf *service.ParsedConfig, mgr *service.Resources) (service.BatchOutput, service.BatchPolicy, int, error) {
			return nil, service.BatchPolicy{}, 1, errors.New("not built in this test")
		}))
	linter := env.NewComponentConfigLinter()
	cases := map[string]string{
		"load_urls: []": "load_urls must list at least one",
		"load_urls: [x]\nload_properties: {enable_merge_commit: 'true'}":                          "enable_merge_commit is incompatible with multi-table transactions",
		"load_urls: [x]\nload_properties: {WHERE: 'a > 1'}":                                       "where header",
		"load_urls: [x]\ntable_properties: [{database: d, table: t, properties: {where: 'a>1'}}]": "where header",
		"load_urls: [http://x]\nsemantic: exactly_once\nmysql_address: fe:9030\n":                 "semantic exactly_once needs pipeline_id",
		"load_urls: [http://x]\nsemantic: exactly_once\npipeline_id: p\n":                         "semantic exactly_once needs mysql_address",
		"load_urls: [x]\ncommit_interval: 1500ms\ntxn_timeout: 2s\n":                              "commit_interval must be at most half of txn_timeout",
		"load_urls: [x]\ncommit_interval: 500s\n":                                                 "commit_interval must be at most half of txn_timeout",
		"load_urls: [http://x]\n":                                                                 "schema_evolution: evolve (the default is evolve) reads the tables' columns over mysql_address, which is not set",
		"load_urls: [http://x]\nschema_evolution: error\n":                                        "schema_evolution: error (the default is evolve) reads the tables' columns over mysql_address",
		"load_urls: [http://x]\nschema_evolution: lenient\n":                                      "lenient",
		"load_urls: [http://x]\nmysql_address: fe:9030\nstall_retry_interval: 0s\n":               "stall_retry_interval must be positive",
	}
	for yaml, want := range cases {
		lints, err := linter.LintOutputYAML([]byte("starrocks_txn:\n" + indent(yaml)))
		require.NoError(t, err)
		var texts []string
		for _, l := range lints {
			texts = append(texts, l.What)
		}
		found := false
		for _, txt := range texts {
			if strings.Contains(txt, want) {
				found = true
			}
		}
		assert.True(t, found, "config %q: want a lint containing %q, got %v", yaml, want, texts)
	}
	for _, ok := range []string{"load_urls: [http://fe:8030]\nschema_evolution: ignore", "load_urls: [http://x]\ncommit_interval: 1s\ntxn_timeout: 2s\nmysql_address: fe:9030",
		"load_urls: [http://x]\nsemantic: exactly_once\npipeline_id: p\nmysql_address: fe:9030",
		"load_urls: [http://x]\nmysql_address: fe:9030\nschema_evolution: error\ncreate_table_properties: {replication_num: \"1\"}"} {
		lints, err := linter.LintOutputYAML([]byte("starrocks_txn:\n" + indent(ok)))
		require.NoError(t, err)
		assert.Empty(t, lints, ok)
	}
}

func indent(s string) string {
	out := "  "
	for _, r := range s {
		out += string(r)
		if r == '\n' {
			out += "  "
		}
	}
	return out
}

func TestHeadersPerTable(t *testing.T) {
	pc, err := parseTestYAML(`
load_urls: [x]
load_properties: {max_filter_ratio: "0.1", FORMAT: json}
table_properties:
  - {database: d, table: t, properties: {max_filter_ratio: "0", partial_update: "true"}}
`, nil)
	require.NoError(t, err)
	c, err := configFromParsed(pc)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"FORMAT": "json", "strip_outer_array": "true", "ignore_json_size": "true", "max_filter_ratio": "0.1"}, c.headersFor("d", "u"))
	assert.Equal(t, map[string]string{"FORMAT": "json", "strip_outer_array": "true", "ignore_json_size": "true", "max_filter_ratio": "0", "partial_update": "true"}, c.headersFor("d", "t"))
	assert.Equal(t, 100*time.Millisecond, c.miniInterval())
}

func TestLoadPropertiesValidated(t *testing.T) {
	for yaml, want := range map[string]string{
		"load_properties: {label: x}":                            "set by the output itself",
		"load_properties: {Timeout: '10'}":                       "set by the output itself",
		"load_properties: {format: csv}":                         "format csv is not supported",
		"compression: gzip\nload_properties: {compression: lz4}": "conflicts with compression gzip",
	} {
		pc, err := parseTestYAML("load_urls: [x]\n"+yaml, nil)
		require.NoError(t, err)
		_, err = configFromParsed(pc)
		require.ErrorContains(t, err, want, yaml)
	}
}

func TestExactlyOnceConfigValidated(t *testing.T) {
	for yaml, want := range map[string]string{
		"semantic: exactly_once\nmysql_address: fe:9030\n":                                         "semantic exactly_once needs pipeline_id",
		"semantic: exactly_once\npipeline_id: p\n":                                                 "semantic exactly_once needs mysql_address",
		"semantic: exactly_once\nmysql_address: fe:9030\npipeline_id: " + strings.Repeat("x", 129): "longer than 128",
		"semantic: exactly_once\nmysql_address: fe:9030\npipeline_id: p\nprogress_table: 'a b'\n":  "progress_table",
	} {
		pc, err := parseTestYAML("load_urls: [x]\n"+yaml, nil)
		require.NoError(t, err)
		_, err = configFromParsed(pc)
		require.ErrorContains(t, err, want, yaml)
	}
	pc, err := parseTestYAML("load_urls: [x]\n", nil)
	require.NoError(t, err)
	c, err := configFromParsed(pc)
	require.NoError(t, err)
	assert.False(t, c.exactlyOnce, "at_least_once is the default")
	assert.Equal(t, "starrocks_txn_progress", c.progressTable)
}

// pipeline_id is only checked where it is used.
func TestPipelineIDLengthCheckedWhenUsed(t *testing.T) {
	long := strings.Repeat("p", maxPipelineID+1)
	pc, err := parseTestYAML("load_urls: [ http://fake:8030 ]\npipeline_id: "+long+"\n", nil)
	require.NoError(t, err)
	_, err = configFromParsed(pc)
	assert.NoError(t, err, "at_least_once without mysql_address does not use it")
	pc, err = parseTestYAML("load_urls: [ http://fake:8030 ]\nmysql_address: 127.0.0.1:9030\npipeline_id: "+long+"\n", nil)
	require.NoError(t, err)
	_, err = configFromParsed(pc)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "longer than 128")
}

// progress_table reaches SQL whenever writer rows or progress are kept: it
// is checked in every mode, whether this configuration uses it or not.
func TestProgressTableValidatedInEveryMode(t *testing.T) {
	for _, mode := range []string{
		"",                                // at_least_once, no writer rows
		"mysql_address: 127.0.0.1:9030\n", // at_least_once, key models only
		"mysql_address: 127.0.0.1:9030\npipeline_id: p\n",                         // at_least_once with writer rows
		"semantic: exactly_once\nmysql_address: 127.0.0.1:9030\npipeline_id: p\n", // exactly_once
	} {
		pc, err := parseTestYAML("load_urls: [ http://fake:8030 ]\n"+mode+"progress_table: \"p`; DROP TABLE orders; --\"\n", nil)
		require.NoError(t, err)
		_, err = configFromParsed(pc)
		require.Error(t, err, "mode %q", mode)
		assert.Contains(t, err.Error(), "progress_table")
	}
}
