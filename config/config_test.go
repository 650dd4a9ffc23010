package config_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	_ "github.com/redpanda-data/benthos/v4/public/components/io"
	_ "github.com/redpanda-data/benthos/v4/public/components/pure"
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/starrocks-txn/benthos-starrocks/commands/produce"
	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/testkit/emurig"
	kafkakit "github.com/starrocks-txn/benthos-starrocks/testkit/kafka"
	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"

	_ "github.com/starrocks-txn/benthos-starrocks/components"

	"github.com/starrocks-txn/benthos-starrocks/testkit"
)

// configCase is one production config and its source format (the
// txn_assembler's, and `produce`'s).
type configCase struct {
	file   string
	format string // txn_assembler format
	check  string // the input's batching check for that format
}

var cases = []configCase{
	{file: "envelope.yaml", format: "envelope", check: `this.type == "TXN_END"`},
	{file: "maxwell.yaml", format: "maxwell", check: `this.commit == true`},
}

func readConfig(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	return string(b)
}

// lint runs the full Benthos linter (every core component and the plugins)
// with only vars set: every other placeholder must have a default.
func lint(t *testing.T, conf string, vars ...string) []service.Lint {
	t.Helper()
	env := map[string]string{}
	for i := 0; i+1 < len(vars); i += 2 {
		env[vars[i]] = vars[i+1]
	}
	linter := service.GlobalEnvironment().FullConfigSchema("", "").NewStreamConfigLinter().
		SetRejectDeprecated(true).
		SetEnvVarLookupFunc(func(_ context.Context, k string) (string, bool) { v, ok := env[k]; return v, ok })
	lints, err := linter.LintYAML([]byte(conf))
	require.NoError(t, err)
	return lints
}

func TestConfigsLint(t *testing.T) {
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			conf := readConfig(t, c.file)
			assert.Empty(t, lint(t, conf), "the config lints clean")

			// StreamBuilder parses every field (and lints again) the way
			// the binary does.
			b := service.GlobalEnvironment().NewStreamBuilder()
			b.SetEnvVarLookupFunc(func(string) (string, bool) { return "", false })
			require.NoError(t, b.SetYAML(conf))

			// The linter is not blind: an unknown field and a broken lint
			// rule in the same config are reported.
			bad := strings.Replace(conf, "    commit_interval: 1s\n", "    commit_interval: 1s\n    no_such_field: 1\n", 1)
			require.NotEqual(t, conf, bad)
			assert.NotEmpty(t, lint(t, bad), "an unknown field fails the lint")
			bad = strings.Replace(conf, "    commit_interval: 1s\n", "    commit_interval: 400s\n", 1)
			assert.NotEmpty(t, lint(t, bad), "commit_interval over half of txn_timeout fails the lint")

			// Without the MySQL address, schema_evolution (and exactly_once)
			// cannot work, and the lint says so.
			noMySQL := strings.Replace(conf, `mysql_address: "${STARROCKS_MYSQL_ADDRESS:localhost:9030}"`, `mysql_address: ""`, 1)
			require.NotEqual(t, conf, noMySQL)
			lints := lint(t, noMySQL, "STARROCKS_SEMANTIC", "exactly_once")
			require.NotEmpty(t, lints)
			assert.Contains(t, lints[0].What, "mysql_address")
			assert.Empty(t, lint(t, conf, "STARROCKS_SEMANTIC", "exactly_once", "STARROCKS_MYSQL_ADDRESS", "fe:9030"))
			assert.Empty(t, lint(t, noMySQL, "STARROCKS_SCHEMA_EVOLUTION", "ignore"), "ignore needs no MySQL address")
		})
	}
}

var placeholder = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)(:[^}]*)?\}`)

// The production shape: env-var placeholders with defaults for everything
// that differs between environments, the batching check of the format, the
// HTTP server on for /metrics, metrics a core exporter, and a shutdown
// timeout that leaves room for a revoke and the last commit.
func TestConfigsAreProductionShaped(t *testing.T) {
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			conf := readConfig(t, c.file)
			vars := map[string]bool{}
			for _, m := range placeholder.FindAllStringSubmatch(conf, -1) {
				assert.NotEmpty(t, m[2], "placeholder %s has a default", m[0])
				vars[m[1]] = true
			}
			for _, v := range []string{"KAFKA_BROKERS", "KAFKA_TOPIC", "KAFKA_GROUP", "KAFKA_USER", "KAFKA_PASSWORD",
				"STARROCKS_LOAD_URL", "STARROCKS_USER", "STARROCKS_PASSWORD"} {
				assert.True(t, vars[v], "the config reads %s", v)
			}

			var doc struct {
				HTTP struct {
					Enabled bool `yaml:"enabled"`
				} `yaml:"http"`
				Input struct {
					Kafka struct {
						CheckpointLimit  int    `yaml:"checkpoint_limit"`
						RevokeTimeout    string `yaml:"revoke_timeout"`
						RebalanceTimeout string `yaml:"rebalance_timeout"`
						Batching         struct {
							Check  string `yaml:"check"`
							Count  int    `yaml:"count"`
							Period string `yaml:"period"`
						} `yaml:"batching"`
					} `yaml:"kafka_txn"`
					Processors []map[string]struct {
						Format string `yaml:"format"`
					} `yaml:"processors"`
				} `yaml:"input"`
				Pipeline map[string]any `yaml:"pipeline"`
				Output   struct {
					StarRocks struct {
						CommitInterval string `yaml:"commit_interval"`
						MaxInFlight    int    `yaml:"max_in_flight"`
						BufferSize     int64  `yaml:"buffer_size"`
					} `yaml:"starrocks_txn"`
				} `yaml:"output"`
				Metrics         map[string]any `yaml:"metrics"`
				ShutdownTimeout string         `yaml:"shutdown_timeout"`
			}
			require.NoError(t, yaml.Unmarshal([]byte(conf), &doc))
			assert.True(t, doc.HTTP.Enabled, "http serves /metrics")
			// One exporter, served at /metrics: the Prometheus one, which the
			// shipped dashboard and alert rules read (the linter above proved
			// it is registered; core Benthos has json_api, not prometheus).
			assert.Len(t, doc.Metrics, 1, "one metrics exporter")
			assert.Contains(t, doc.Metrics, "prometheus", "config/grafana-dashboard.json and config/alerts.yaml need Prometheus")

			k := doc.Input.Kafka
			assert.Equal(t, c.check, k.Batching.Check, "batches end at the format's transaction end")
			assert.Positive(t, k.Batching.Count)
			assert.NotEmpty(t, k.Batching.Period, "a period flushes a quiet partition's tail")
			require.Len(t, doc.Input.Processors, 1)
			assert.Equal(t, c.format, doc.Input.Processors[0]["txn_assembler"].Format, "the assembler runs under input.processors")
			assert.Empty(t, doc.Pipeline, "no pipeline processors: several threads would reorder partitions")

			out := doc.Output.StarRocks
			assert.Positive(t, out.MaxInFlight)
			assert.Positive(t, out.BufferSize)
			// Sizing: a commit cycle's batches fit the in-flight window and a
			// partition's unacknowledged messages fit checkpoint_limit.
			assert.GreaterOrEqual(t, k.CheckpointLimit, 2*k.Batching.Count)

			dur := func(s string) time.Duration {
				d, err := time.ParseDuration(s)
				require.NoError(t, err, s)
				return d
			}
			shutdown, revoke, commit := dur(doc.ShutdownTimeout), dur(k.RevokeTimeout), dur(out.CommitInterval)
			assert.Less(t, revoke, dur(k.RebalanceTimeout))
			assert.Greater(t, shutdown*3/4, revoke+2*commit,
				"the graceful part of shutdown_timeout covers a revoke and the last commit cycle")
		})
	}
}

func freeAddr(t *testing.T) string { return testkit.FreeAddr(t) }

// Each config runs for real, unchanged, against kfake and the emulator with
// only environment variables pointing it there: the source transactions
// produced arrive, the tables equal the source, and /metrics answers.
func TestConfigsRunAgainstKafkaAndEmulator(t *testing.T) {
	schema := emurig.ExampleSchema(t)
	for _, c := range cases {
		for _, semantic := range []string{"at_least_once", "exactly_once"} {
			t.Run(c.file+"/"+semantic, func(t *testing.T) {
				t.Parallel()
				runConfig(t, c, schema, semantic)
			})
		}
	}
}

// runConfig produces 60 source transactions in the config's format, runs the
// config with only environment variables pointing it at kfake and a fresh
// emulator, and checks the tables, consistency, /metrics and, with
// exactly_once, the progress rows.
func runConfig(t *testing.T, c configCase, schema, semantic string) {
	em, db := emurig.StartSQL(t, emulator.Config{Schema: schema})
	const topic, partitions = "source", 3
	kafka := kafkakit.New(t, kafkakit.Topic(topic, partitions, nil))

	// Committed source transactions, written by `produce` as the README
	// tells a user to (one Kafka transaction each).
	res, err := produce.Run(context.Background(), produce.Options{
		Brokers: kafka.Brokers(), Format: c.format, Topic: topic, Txns: 60, Seed: 11,
	})
	require.NoError(t, err)
	require.Equal(t, int32(partitions), res.Partitions)
	model := res.Model

	httpAddr := freeAddr(t)
	vars := map[string]string{
		"KAFKA_BROKERS":           strings.Join(kafka.Brokers(), ","),
		"KAFKA_TOPIC":             topic,
		"KAFKA_GROUP":             "config-test",
		"STARROCKS_LOAD_URL":      em.FEURL(),
		"STARROCKS_MYSQL_ADDRESS": em.MySQLAddr(),
		"HTTP_ADDRESS":            httpAddr,
		"LOG_LEVEL":               "WARN",
	}
	if semantic == "exactly_once" {
		vars["STARROCKS_SEMANTIC"] = semantic
	}
	b := service.GlobalEnvironment().NewStreamBuilder()
	b.SetEnvVarLookupFunc(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	require.NoError(t, b.SetYAML(readConfig(t, c.file)))
	stream, err := b.Build()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- stream.Run(ctx) }()

	want := model.Snapshot()
	require.Eventually(t, func() bool {
		got, err := workload.ReadTarget(context.Background(), db, true)
		return err == nil && len(workload.Compare(want, got)) == 0
	}, 20*time.Second, 100*time.Millisecond, "the produced source transactions arrive in StarRocks")
	torn, orphans, err := workload.CheckConsistency(context.Background(), db)
	require.NoError(t, err)
	assert.Zero(t, torn+orphans)

	resp, err := http.Get("http://" + httpAddr + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), "starrocks_txn_commits", "the output's metrics are served at /metrics")
	assert.Contains(t, string(body), "# TYPE starrocks_txn_commits counter", "in Prometheus's text format, which the dashboard and alerts read")

	if semantic == "exactly_once" {
		var n int
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM test.starrocks_txn_progress").Scan(&n))
		assert.Equal(t, partitions, n, "exactly_once records every partition's progress")
	}

	require.NoError(t, stream.StopWithin(30*time.Second), "a graceful stop")
	cancel()
	<-done
}
