package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A batching policy under dead_letter would hold a poisoned source
// transaction until the policy fills (forever, with no more dead letters) and
// could split it across Kafka transactions, so the lint refuses it naming the
// field, and a config that skips the lint is refused at start with the same
// text before anything is read. Without batching the example drains as one
// Kafka transaction per source transaction (TestExampleDeadLetterKafka).
func TestDeadLetterWithBatchingIsRefused(t *testing.T) {
	conf, err := os.ReadFile("examples/dead_letter_kafka.yaml")
	require.NoError(t, err)
	const tail = ": a batching policy under dead_letter holds a poisoned source transaction back until the policy fills (possibly forever) and can split it; remove it: each source transaction is written as one batch"
	kafka := strings.Replace(string(conf), "        transactional_id:", "        batching: { count: 10 }\n        transactional_id:", 1)
	require.NotEqual(t, string(conf), kafka)
	broker := underBroker(t, string(conf))
	for _, tc := range []struct{ name, conf, field string }{
		{"kafka_txn", kafka, "dead_letter.kafka_txn.batching"},
		{"broker", broker, "dead_letter.broker.batching"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vars := map[string]string{"INPUT_FILE": "examples/data/poisoned.envelope.jsonl", "KAFKA_BROKERS": "127.0.0.1:1", "STARROCKS_LOAD_URL": "http://127.0.0.1:1"}
			lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }

			b := service.GlobalEnvironment().NewStreamBuilder()
			b.SetEnvVarLookupFunc(lookup)
			err := b.SetYAML(tc.conf)
			require.Error(t, err, "the lint must refuse a batching policy under dead_letter")
			assert.Contains(t, err.Error(), tc.field+tail)

			b = service.GlobalEnvironment().NewStreamBuilder()
			b.SetEnvVarLookupFunc(lookup)
			b.DisableLinting()
			require.NoError(t, b.SetYAML(tc.conf))
			require.NoError(t, b.SetLoggerYAML("level: none"))
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			start := time.Now()
			s, err := b.Build()
			if err == nil {
				err = s.Run(ctx)
			}
			require.Error(t, err, "the start must refuse a batching policy under dead_letter")
			assert.Contains(t, err.Error(), tc.field+tail)
			assert.NoError(t, ctx.Err(), "refused at start, not after %s", time.Since(start))
		})
	}
}

// underBroker moves the example's dead_letter output into a broker with a
// batching policy of its own.
func underBroker(t *testing.T, conf string) string {
	t.Helper()
	lines := strings.Split(conf, "\n")
	var out []string
	in := false
	for _, l := range lines {
		switch {
		case l == "      kafka_txn:":
			in = true
			out = append(out, "      broker:", "        batching: { period: 1s }", "        outputs:", "          - kafka_txn:")
			continue
		case in && strings.HasPrefix(l, "        "):
			l = "      " + l
		case in && strings.TrimSpace(l) != "":
			in = false
		}
		out = append(out, l)
	}
	require.Contains(t, out, "          - kafka_txn:")
	return strings.Join(out, "\n")
}
