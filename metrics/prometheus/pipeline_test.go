package prometheus_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/metrics/prometheus"
	"github.com/starrocks-txn/benthos-starrocks/testkit"
	kafkakit "github.com/starrocks-txn/benthos-starrocks/testkit/kafka"
	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"

	// The plugins of the pipeline.
	_ "github.com/starrocks-txn/benthos-starrocks/components"
)

// pipelineRun is what the real pipeline reported through the exporter.
type pipelineRun struct {
	// declared are the families the components declared to the exporter,
	// whether or not they fired.
	declared []prometheus.Family
	// scraped is the final scrape.
	scraped map[string]*dto.MetricFamily
	// committed is how many source transactions the producer committed.
	committed int64
}

var (
	runOnce sync.Once
	run     *pipelineRun
	runErr  string
)

// realPipeline runs the product's pipeline (examples/demo.yaml: kafka_txn →
// txn_assembler → starrocks_txn) once per test binary against the emulator
// and an in-process Kafka, with transactional CDC traffic including aborted
// Kafka transactions, and the prometheus exporter as its metrics.
func realPipeline(t *testing.T) *pipelineRun {
	t.Helper()
	runOnce.Do(func() {
		var err error
		run, err = runPipeline(t)
		if err != nil {
			runErr = err.Error()
		}
	})
	require.Empty(t, runErr, "running the real pipeline")
	require.NotNil(t, run, "the real pipeline failed in an earlier test")
	return run
}

func runPipeline(t *testing.T) (*pipelineRun, error) {
	pipeline, err := os.ReadFile("../../examples/demo.yaml")
	if err != nil {
		return nil, err
	}
	schema, err := os.ReadFile("../../examples/schema.sql")
	if err != nil {
		return nil, err
	}
	em, err := emulator.Start(emulator.Config{HTTPAddr: "127.0.0.1:0", MySQLAddr: "127.0.0.1:0", Schema: string(schema)})
	if err != nil {
		return nil, err
	}
	defer em.Close()
	const topic = "cdc"
	kafka, err := kafkakit.Start(kafkakit.Topic(topic, 3, nil))
	if err != nil {
		return nil, err
	}
	defer kafka.Close()
	gen := workload.NewGenerator(workload.Options{Partitions: 3, Seed: 11, Events: true})
	prod, err := workload.NewProducer(workload.ProducerOptions{
		Brokers: kafka.Brokers(), Topic: topic, AbortRatio: 0.2, Rate: 200,
	}, gen, workload.NewModel())
	if err != nil {
		return nil, err
	}
	defer prod.Close()

	env := service.GlobalEnvironment().Clone()
	var mu sync.Mutex
	var exp *prometheus.Exporter
	require.NoError(t, env.RegisterMetricsExporter("prometheus_captured", prometheus.Spec(),
		func(conf *service.ParsedConfig, log *service.Logger) (service.MetricsExporter, error) {
			e, err := prometheus.New(conf, log)
			mu.Lock()
			exp = e
			mu.Unlock()
			return e, err
		}))
	b := env.NewStreamBuilder()
	vars := map[string]string{
		"KAFKA_BROKERS":      strings.Join(kafka.Brokers(), ","),
		"KAFKA_TOPIC":        topic,
		"KAFKA_GROUP":        "prometheus-test",
		"STARROCKS_LOAD_URL": em.FEURL(),
		// The output checks schemas over the MySQL port (schema_evolution's default).
		"STARROCKS_MYSQL_ADDRESS": em.MySQLAddr(),
		"STARROCKS_USER":          "root",
		"STARROCKS_PASSWORD":      "",
	}
	b.SetEnvVarLookupFunc(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err := b.SetYAML(string(pipeline)); err != nil {
		return nil, err
	}
	if err := b.SetMetricsYAML(`prometheus_captured: {}`); err != nil {
		return nil, err
	}
	strm, err := b.Build()
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = strm.Run(runCtx) }()

	prodCtx, stopProducing := context.WithTimeout(context.Background(), 2*time.Second)
	defer stopProducing()
	if err := prod.Produce(prodCtx, 0); err != nil {
		return nil, err
	}
	committed := prod.Stats.Committed.Load()

	// Wait until every committed source transaction was loaded.
	mu.Lock()
	e := exp
	mu.Unlock()
	require.NotNil(t, e, "the stream built the exporter")
	var scraped map[string]*dto.MetricFamily
	if !testkit.Poll(60*time.Second, func() bool {
		scraped = parse(t, serveMux(t, e.HandlerFunc()))
		return sum(scraped, "starrocks_txn_source_txns_committed") >= float64(committed)
	}) {
		require.Failf(t, "pipeline did not drain", "%v of %d source transactions loaded", sum(scraped, "starrocks_txn_source_txns_committed"), committed)
	}
	r := &pipelineRun{declared: e.Families(), scraped: scraped, committed: committed}
	if err := strm.StopWithin(15 * time.Second); err != nil {
		return nil, err
	}
	return r, nil
}

// sum adds up a counter's or gauge's samples over all label values.
func sum(fams map[string]*dto.MetricFamily, name string) float64 {
	var s float64
	for _, m := range fams[name].GetMetric() {
		s += m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return s
}
