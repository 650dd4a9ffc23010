package config_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/testkit/emurig"
	kafkakit "github.com/starrocks-txn/benthos-starrocks/testkit/kafka"
	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// config/debezium.yaml lints clean with no variable set, the linter is not
// blind to it, and every placeholder has a default.
func TestDebeziumConfigLints(t *testing.T) {
	conf := readConfig(t, "debezium.yaml")
	assert.Empty(t, lint(t, conf), "the config lints clean")
	b := service.GlobalEnvironment().NewStreamBuilder()
	b.SetEnvVarLookupFunc(func(string) (string, bool) { return "", false })
	require.NoError(t, b.SetYAML(conf))
	for _, m := range placeholder.FindAllStringSubmatch(conf, -1) {
		assert.NotEmpty(t, m[2], "placeholder %s has a default", m[0])
	}
	assert.Contains(t, conf, "\nmetrics:\n  prometheus: {}\n", "the exporter config/grafana-dashboard.json and config/alerts.yaml read")
	bad := strings.Replace(conf, "    revoke_timeout: 20s\n", "    revoke_timeout: 90s\n", 1)
	require.NotEqual(t, conf, bad)
	assert.NotEmpty(t, lint(t, bad), "revoke_timeout above rebalance_timeout fails the lint")
	noMySQL := strings.Replace(conf, `mysql_address: "${STARROCKS_MYSQL_ADDRESS:localhost:9030}"`, `mysql_address: ""`, 1)
	require.NotEqual(t, conf, noMySQL)
	lints := lint(t, noMySQL, "STARROCKS_SEMANTIC", "exactly_once")
	require.NotEmpty(t, lints)
	assert.Contains(t, lints[0].What, "mysql_address")
}

// config/debezium.yaml runs unchanged against kfake and the emulator with
// only environment variables pointing it there: a Debezium connector's
// topics (snapshot, transactions over several tables, an unconsumed one,
// re-sent copies) arrive whole, the tables equal the source, /metrics serves
// the input's metrics, and exactly_once writes the connector's progress.
func TestDebeziumConfigRuns(t *testing.T) {
	schema := emurig.ExampleSchema(t)
	for _, semantic := range []string{"at_least_once", "exactly_once"} {
		t.Run(semantic, func(t *testing.T) {
			t.Parallel()
			em, db := emurig.StartSQL(t, emulator.Config{Schema: schema})
			kafka := kafkakit.New(t)

			src := workload.NewDebeziumSource(workload.DebeziumOptions{Partitions: 3, Schemas: true, SnapshotOrders: 10, LargeEvery: 10, ResendRatio: 0.1, Seed: 3})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			require.NoError(t, workload.CreateDebeziumTopics(ctx, kafka.Brokers(), src))
			model := workload.NewModel()
			prod, err := workload.NewDebeziumProducer(workload.DebeziumProducerOptions{Brokers: kafka.Brokers()}, src, model)
			require.NoError(t, err)
			defer prod.Close()
			require.NoError(t, prod.Snapshot(ctx))
			require.NoError(t, prod.Produce(ctx, 60))

			httpAddr := freeAddr(t)
			vars := map[string]string{
				"KAFKA_BROKERS":      strings.Join(kafka.Brokers(), ","),
				"DEBEZIUM_PREFIX":    "dbserver1",
				"DEBEZIUM_TOPICS":    strings.Join(src.DataTopics(), ","),
				"KAFKA_GROUP":        "config-test",
				"STARROCKS_LOAD_URL": em.FEURL(),
				"HTTP_ADDRESS":       httpAddr,
				"LOG_LEVEL":          "WARN",
				// schema_evolution reads the tables' columns here.
				"STARROCKS_MYSQL_ADDRESS": em.MySQLAddr(),
			}
			if semantic == "exactly_once" {
				vars["STARROCKS_SEMANTIC"] = semantic
			}
			b := service.GlobalEnvironment().NewStreamBuilder()
			b.SetEnvVarLookupFunc(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
			require.NoError(t, b.SetYAML(readConfig(t, "debezium.yaml")))
			stream, err := b.Build()
			require.NoError(t, err)
			runCtx, stop := context.WithCancel(context.Background())
			defer stop()
			done := make(chan error, 1)
			go func() { done <- stream.Run(runCtx) }()

			want := model.Snapshot()
			require.Eventually(t, func() bool {
				got, err := workload.ReadTarget(context.Background(), db, true)
				return err == nil && len(workload.Compare(want, got)) == 0
			}, 40*time.Second, 100*time.Millisecond, "the connector's transactions arrive in StarRocks")
			torn, orphans, err := workload.CheckConsistency(context.Background(), db)
			require.NoError(t, err)
			assert.Zero(t, torn+orphans)

			resp, err := http.Get("http://" + httpAddr + "/metrics")
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			assert.Contains(t, string(body), "debezium_txn_transactions", "the input's metrics are served at /metrics")
			assert.Contains(t, string(body), "# TYPE debezium_txn_transactions counter", "in Prometheus's text format, which the dashboard and alerts read")
			if semantic == "exactly_once" {
				var n int
				require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM test.starrocks_txn_progress WHERE source_partition = ?", src.TransactionTopic()).Scan(&n))
				assert.Equal(t, 1, n, "exactly_once records the connector's commit-order position")
			}
			require.NoError(t, stream.StopWithin(30*time.Second), "a graceful stop")
			stop()
			<-done
		})
	}
}
