package starrocks_txn

import (
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// lintCase is one value rule: a bad value, the lint text it gets (the same
// text the start refuses it with), and a good value of the same field.
type lintCase struct {
	name      string
	bad, good string
	want      string
	// client: the start-time twin is starrocks.New (the load URLs), whose
	// message ends like the lint's.
	client bool
}

var lintCases = []lintCase{
	{name: "no load URL", bad: "load_urls: []", good: "load_urls: [http://fe:8030]",
		want: "load_urls must list at least one StarRocks FE address, e.g. http://127.0.0.1:8030"},
	{name: "load URL without a scheme", bad: "load_urls: [fe:8030]", good: "load_urls: [http://fe:8030]",
		want: "load_urls[0]: scheme must be http or https (e.g. http://fe:8030)", client: true},
	{name: "second load URL ftp", bad: "load_urls: [http://a:8030, ftp://b:8030]", good: "load_urls: [http://a:8030, https://b:8443]",
		want: "load_urls[1]: scheme must be http or https (e.g. http://fe:8030)", client: true},
	{name: "load URL without a host", bad: "load_urls: ['http://']", good: "load_urls: ['http://fe']",
		want: "load_urls[0]: no host (e.g. http://fe:8030)", client: true},
	{name: "load URL with credentials", bad: "load_urls: ['http://root:secret@fe:8030']", good: "load_urls: ['http://fe:8030']",
		want: "load_urls[0]: credentials in the URL are not allowed; set username and password instead", client: true},
	{name: "load URL with a query", bad: "load_urls: ['http://fe:8030/?db=x']", good: "load_urls: ['http://fe:8030/']",
		want: "load_urls[0]: a load URL takes no query or fragment", client: true},
	{name: "load URL unparsable", bad: "load_urls: ['http://fe:8030/%zz']", good: "load_urls: ['http://fe:8030/%20']",
		want: "load_urls[0]: not a valid URL; use http://host:8030", client: true},

	{name: "commit_interval without unit", bad: "commit_interval: 10", good: "commit_interval: 1.5s",
		want: `commit_interval: "10" is not a duration: give a number and a unit, e.g. 500ms or 10s`},
	{name: "txn_timeout in days", bad: "txn_timeout: 1d", good: "txn_timeout: 1h30m",
		want: `txn_timeout: "1d" is not a duration: give a number and a unit, e.g. 500ms or 10s`},
	{name: "retry initial without unit", bad: "retry_backoff: {initial_interval: 5}", good: "retry_backoff: {initial_interval: .5s}",
		want: `retry_backoff.initial_interval: "5" is not a duration: give a number and a unit, e.g. 500ms or 10s`},
	{name: "retry max with a space", bad: "retry_backoff: {max_interval: 30 s}", good: "retry_backoff: {max_interval: 30s}",
		want: `retry_backoff.max_interval: "30 s" is not a duration: give a number and a unit, e.g. 500ms or 10s`},
	{name: "sequence_gap_timeout without unit", bad: "sequence_gap_timeout: 10", good: "sequence_gap_timeout: 10000ms",
		want: `sequence_gap_timeout: "10" is not a duration: give a number and a unit, e.g. 500ms or 10s`},
	{name: "request_timeout half written", bad: "request_timeout: 1m30", good: "request_timeout: 1m30s",
		want: `request_timeout: "1m30" is not a duration: give a number and a unit, e.g. 500ms or 10s`},
	{name: "label_state_wait unit only", bad: "label_state_wait: s", good: "label_state_wait: 2m",
		want: `label_state_wait: "s" is not a duration: give a number and a unit, e.g. 500ms or 10s`},

	{name: "commit_interval zero", bad: "commit_interval: 0s", good: "commit_interval: 1us",
		want: "commit_interval must be positive"},
	{name: "commit_interval negative", bad: "commit_interval: -1s", good: "commit_interval: 1s",
		want: "commit_interval must be positive"},
	{name: "txn_timeout below 1s", bad: "txn_timeout: 999ms\ncommit_interval: 100ms", good: "txn_timeout: 1s\ncommit_interval: 100ms",
		want: "txn_timeout must be at least 1s"},
	{name: "commit_interval over half of txn_timeout", bad: "commit_interval: 301s", good: "commit_interval: 300s",
		want: "commit_interval must be at most half of txn_timeout: lower commit_interval or raise txn_timeout"},
	{name: "commit_interval over half of a short txn_timeout", bad: "commit_interval: 1500ms\ntxn_timeout: 2s", good: "commit_interval: 1s\ntxn_timeout: 2s",
		want: "commit_interval must be at most half of txn_timeout: lower commit_interval or raise txn_timeout"},
	{name: "retry initial zero", bad: "retry_backoff: {initial_interval: 0s}", good: "retry_backoff: {initial_interval: 1ms}",
		want: "retry_backoff: initial_interval must be positive and not above max_interval"},
	{name: "retry max below initial", bad: "retry_backoff: {initial_interval: 5s, max_interval: 1s}", good: "retry_backoff: {initial_interval: 5s, max_interval: 5s}",
		want: "retry_backoff: initial_interval must be positive and not above max_interval"},
	{name: "sequence_gap_timeout zero", bad: "sequence_gap_timeout: 0s", good: "sequence_gap_timeout: 1s",
		want: "sequence_gap_timeout must be positive"},
	{name: "unknown_commit_timeout zero", bad: "unknown_commit_timeout: 0s", good: "unknown_commit_timeout: 1s",
		want: "unknown_commit_timeout must be positive"},
	{name: "mysql_timeout zero", bad: "mysql_timeout: 0s", good: "mysql_timeout: 2s",
		want: "mysql_timeout must be positive"},
	{name: "stall_retry_interval zero", bad: "stall_retry_interval: 0s\nmysql_address: fe:9030", good: "stall_retry_interval: 5s\nmysql_address: fe:9030",
		want: "stall_retry_interval must be positive"},
	{name: "stall_retry_interval without unit", bad: "stall_retry_interval: 30\nmysql_address: fe:9030", good: "stall_retry_interval: 30s\nmysql_address: fe:9030",
		want: `stall_retry_interval: "30" is not a duration: give a number and a unit, e.g. 500ms or 10s`},
	{name: "schema_evolution without mysql_address", bad: "schema_evolution: evolve", good: "schema_evolution: evolve\nmysql_address: fe:9030",
		want: "schema_evolution: evolve (the default is evolve) " + msgSchemaNeedsMySQLTail},
	{name: "unknown_commit_timeout without unit", bad: "unknown_commit_timeout: 30", good: "unknown_commit_timeout: 30s",
		want: `unknown_commit_timeout: "30" is not a duration: give a number and a unit, e.g. 500ms or 10s`},

	{name: "max_in_flight zero", bad: "max_in_flight: 0", good: "max_in_flight: 1",
		want: "max_in_flight must be at least 1"},
	{name: "max_in_flight negative", bad: "max_in_flight: -4", good: "max_in_flight: 65536",
		want: "max_in_flight must be at least 1"},
	{name: "max_databases zero", bad: "max_databases: 0", good: "max_databases: 1",
		want: "max_databases must be at least 1"},
	{name: "buffer_size zero", bad: "buffer_size: 0", good: "buffer_size: 1",
		want: "buffer_size must be at least 1 (bytes)"},

	{name: "label_prefix with a dot", bad: "label_prefix: my.loader", good: "label_prefix: my-loader_2",
		want: `label_prefix "my.loader" must be 1 to 64 letters, digits, _ or -`},
	{name: "label_prefix empty", bad: "label_prefix: ''", good: "label_prefix: a",
		want: `label_prefix "" must be 1 to 64 letters, digits, _ or -`},
	{name: "label_prefix too long", bad: "label_prefix: " + strings.Repeat("p", 65), good: "label_prefix: " + strings.Repeat("p", 64),
		want: `label_prefix "` + strings.Repeat("p", 65) + `" must be 1 to 64 letters, digits, _ or -`},

	{name: "mysql_address without port", bad: "mysql_address: fe", good: "mysql_address: fe:9030",
		want: `mysql_address "fe" must be host:port (e.g. fe:9030)`},
	{name: "mysql_address as a URL", bad: "mysql_address: mysql://fe:9030", good: "mysql_address: '[::1]:9030'",
		want: `mysql_address "mysql://fe:9030" must be host:port (e.g. fe:9030)`},
	{name: "mysql_address as a DSN", bad: "mysql_address: tcp(fe:9030)", good: "mysql_address: 10.0.0.7:9030",
		want: `mysql_address "tcp(fe:9030)" must be host:port (e.g. fe:9030)`},
	{name: "mysql_address port out of range", bad: "mysql_address: fe:99999", good: "mysql_address: fe:65535",
		want: `mysql_address "fe:99999" must be host:port (e.g. fe:9030)`},
	{name: "mysql_address port zero", bad: "mysql_address: fe:0", good: "mysql_address: fe:1",
		want: `mysql_address "fe:0" must be host:port (e.g. fe:9030)`},

	{name: "mysql_address with credentials", bad: "mysql_address: 'root:hunter2@fe:9030'", good: "mysql_address: fe:9030",
		want: "credentials are not allowed in mysql_address; set username and password"},
	{name: "mysql_address as a DSN with credentials", bad: "mysql_address: 'root:hunter2@tcp(fe:9030)/'", good: "mysql_address: fe:9030",
		want: "credentials are not allowed in mysql_address; set username and password"},
	{name: "mysql_address as a URL with credentials", bad: "mysql_address: 'mysql://root:hunter2@fe:9030'", good: "mysql_address: fe:9030",
		want: "credentials are not allowed in mysql_address; set username and password"},

	{name: "literal database with a space", bad: "database: 'a b'", good: "database: a_b",
		want: `database: invalid database name "a b": character ' ' at byte 1 is not allowed; use letters, digits, '_', '-' or '$'`},
	{name: "literal table with a semicolon", bad: "table: 'x;y'", good: "table: 'x$y'",
		want: `table: invalid table name "x;y": character ';' at byte 1 is not allowed; use letters, digits, '_', '-' or '$'`},
	{name: "literal table empty", bad: "table: ''", good: "table: '${! @starrocks_table }'",
		want: `table: invalid table name: it is empty; set a table name of letters, digits, '_', '-' or '$'`},
	{name: "literal database too long", bad: "database: " + strings.Repeat("d", 257), good: "database: " + strings.Repeat("d", 256),
		want: `database: invalid database name "` + strings.Repeat("d", 80) + `…": 257 characters, StarRocks allows at most 256`},
	{name: "literal table with a newline", bad: "table: \"a\\nb\"", good: "table: ab",
		want: `table: invalid table name "a\nb": control character '\n' at byte 1 (CR/LF and other control characters would corrupt the HTTP request); use letters, digits, '_', '-' or '$'`},

	{name: "dead_letter with batching", bad: "dead_letter: {broker: {outputs: [{drop: {}}], batching: {count: 10}}}", good: "dead_letter: {broker: {outputs: [{drop: {}}], batching: {count: 0, byte_size: 0, period: '', check: '', processors: []}}}",
		want: "dead_letter.broker.batching" + msgDeadLetterBatchingTail},
	{name: "dead_letter with a batching period", bad: "dead_letter: {broker: {outputs: [{drop: {}}], batching: {period: 1s}}}", good: "dead_letter: {broker: {outputs: [{drop: {}}]}}",
		want: "dead_letter.broker.batching" + msgDeadLetterBatchingTail},
	{name: "dead_letter nested broker with batching", bad: "dead_letter: {broker: {outputs: [{drop: {}}, {broker: {outputs: [{drop: {}}], batching: {check: 'true'}}}]}}", good: "dead_letter: {broker: {outputs: [{drop: {}}, {broker: {outputs: [{drop: {}}]}}]}}",
		want: "dead_letter.broker.outputs.1.broker.batching" + msgDeadLetterBatchingTail},

	{name: "exactly_once without pipeline_id", bad: "semantic: exactly_once\nmysql_address: fe:9030", good: "semantic: exactly_once\nmysql_address: fe:9030\npipeline_id: p",
		want: "semantic exactly_once needs pipeline_id: it names this pipeline's rows in the progress table"},
	{name: "exactly_once without mysql_address", bad: "semantic: exactly_once\npipeline_id: p", good: "semantic: exactly_once\npipeline_id: p\nmysql_address: fe:9030",
		want: "semantic exactly_once needs mysql_address: the progress table is created and read over the FE MySQL protocol"},
	{name: "pipeline_id too long", bad: "mysql_address: fe:9030\npipeline_id: " + strings.Repeat("x", 129), good: "mysql_address: fe:9030\npipeline_id: " + strings.Repeat("x", 128),
		want: `pipeline_id "` + strings.Repeat("x", 129) + `" is longer than 128 characters`},
	{name: "progress_table with a space", bad: "semantic: exactly_once\nmysql_address: fe:9030\npipeline_id: p\nprogress_table: 'a b'", good: "semantic: exactly_once\nmysql_address: fe:9030\npipeline_id: p\nprogress_table: a_b$1",
		want: `progress_table "a b" must be 1 to 1000 letters, digits, _, - or $`},

	{name: "progress_table with a backquote, at_least_once", bad: "progress_table: 'p`x'", good: "progress_table: p_x",
		want: "progress_table \"p`x\" must be 1 to 1000 letters, digits, _, - or $"},
	{name: "table_properties without a database", bad: "table_properties: [{database: '', table: t, properties: {}}]", good: "table_properties: [{database: d, table: t, properties: {}}]",
		want: "table_properties: every entry needs a database and a table"},
	{name: "reserved header", bad: "load_properties: {Label: x}", good: "load_properties: {max_filter_ratio: '0'}",
		want: "load_properties: header Label is set by the output itself and cannot be a load property"},
	{name: "reserved header of a table", bad: "table_properties: [{database: d, table: t, properties: {timeout: '5'}}]", good: "table_properties: [{database: d, table: t, properties: {partial_update: 'true'}}]",
		want: "table_properties d.t: header timeout is set by the output itself and cannot be a load property"},
	{name: "header against compression", bad: "compression: gzip\nload_properties: {Content-Encoding: gzip}", good: "compression: gzip\nload_properties: {strict_mode: 'true'}",
		want: "load_properties: header Content-Encoding conflicts with compression gzip: set only one"},
	{name: "csv format", bad: "load_properties: {format: csv}", good: "load_properties: {format: JSON}",
		want: "load_properties: format csv is not supported: the output loads JSON rows"},
	{name: "merge commit", bad: "load_properties: {enable_merge_commit: 'true'}", good: "load_properties: {}",
		want: "load_properties: enable_merge_commit is incompatible with multi-table transactions: remove it"},
	{name: "where header", bad: "table_properties: [{database: d, table: t, properties: {WHERE: 'a > 1'}}]", good: "table_properties: [{database: d, table: t, properties: {columns: 'a,b'}}]",
		want: "table_properties d.t: a where header drops rows of a source transaction and breaks its atomicity: filter with a processor instead"},
}

// withURL adds a load URL unless the case sets its own, and
// schema_evolution: ignore unless it sets a mode or mysql_address (the
// default mode, evolve, needs mysql_address).
func withURL(fields string) string {
	if !strings.Contains(fields, "schema_evolution:") && !strings.Contains(fields, "mysql_address:") {
		fields += "\nschema_evolution: ignore"
	}
	if strings.Contains(fields, "load_urls:") {
		return fields
	}
	return "load_urls: [http://fe:8030]\n" + fields
}

func lintTexts(t *testing.T, linter *service.ComponentConfigLinter, fields string) []string {
	t.Helper()
	lints, err := linter.LintOutputYAML([]byte("starrocks_txn:\n" + indent(fields)))
	require.NoError(t, err)
	var texts []string
	for _, l := range lints {
		texts = append(texts, l.What)
	}
	return texts
}

// startErr is the error the output's constructor would stop the start with,
// up to the StarRocks client (the first remote call comes later).
func startErr(t *testing.T, fields string) error {
	t.Helper()
	pc, err := outputSpec().ParseYAML(fields, nil)
	require.NoError(t, err)
	c, err := configFromParsed(pc)
	if err != nil {
		return err
	}
	_, err = starrocks.New(starrocks.Config{LoadURLs: c.loadURLs})
	return err
}

// Every value rule: the lint names the bad value, the start refuses it with
// the same text, and the good value passes both.
func TestLintValueRules(t *testing.T) {
	env := service.NewEnvironment()
	require.NoError(t, env.RegisterBatchOutput("starrocks_txn", outputSpec(),
		func(*service.ParsedConfig, *service.Resources) (service.BatchOutput, service.BatchPolicy, int, error) {
			return nil, service.BatchPolicy{}, 1, errors.New("not built in this test")
		}))
	linter := env.NewComponentConfigLinter()
	for _, tc := range lintCases {
		t.Run(tc.name, func(t *testing.T) {
			bad, good := withURL(tc.bad), withURL(tc.good)
			assert.Equal(t, []string{tc.want}, lintTexts(t, linter, bad), "the lint of\n%s", bad)
			assert.Empty(t, lintTexts(t, linter, good), "the lint of\n%s", good)

			err := startErr(t, bad)
			require.Error(t, err, "the start of\n%s", bad)
			if tc.client {
				_, tail, _ := strings.Cut(tc.want, ": ")
				assert.True(t, strings.HasSuffix(err.Error(), tail), "the client refuses %s with %q, the lint says %q", tc.bad, err, tc.want)
			} else {
				assert.Equal(t, tc.want, err.Error())
			}
			assert.NoError(t, startErr(t, good), "the start of\n%s", good)
		})
	}
}

// Every header the output sets itself is refused by the lint as at start.
func TestLintReservedHeaders(t *testing.T) {
	env := service.NewEnvironment()
	require.NoError(t, env.RegisterBatchOutput("starrocks_txn", outputSpec(),
		func(*service.ParsedConfig, *service.Resources) (service.BatchOutput, service.BatchPolicy, int, error) {
			return nil, service.BatchPolicy{}, 1, errors.New("not built in this test")
		}))
	linter := env.NewComponentConfigLinter()
	var names []string
	for h := range reservedLoadHeaders {
		names = append(names, h)
	}
	sort.Strings(names)
	require.Len(t, names, 12)
	for _, h := range names {
		fields := withURL("load_properties: {" + strings.ToUpper(h) + ": x}")
		want := "load_properties: header " + strings.ToUpper(h) + " is set by the output itself and cannot be a load property"
		assert.Equal(t, []string{want}, lintTexts(t, linter, fields), h)
		err := startErr(t, fields)
		require.Error(t, err, h)
		assert.Equal(t, want, err.Error())
	}
}
