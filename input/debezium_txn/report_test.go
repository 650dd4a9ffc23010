package debezium_txn

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

func (w *kworld) rawProduce(recs ...*kgo.Record) {
	w.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(w.cluster.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(w.t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(w.t, cl.ProduceSync(ctx, recs...).FirstErr())
}

func orderEvent(id int, txn string, total, dco int) []byte {
	return []byte(fmt.Sprintf(`{"before":null,"after":{"order_id":%d,"customer_id":1,"total_amount":"1.00","order_status":"created"},"op":"c",
	  "source":{"connector":"mysql","db":"test","table":"orders"},"transaction":{"id":%q,"total_order":%d,"data_collection_order":%d}}`, id, txn, total, dco))
}

// A transaction whose END arrived but whose events have not all arrived is
// reported after missing_events_timeout — the transaction id, the topic and
// its collections, the counts seen and expected — and is emitted only once
// the missing event arrives, whole.
func TestMissingEventsAreReportedAndWaitedFor(t *testing.T) {
	w := newKWorld(t, workload.DebeziumOptions{Partitions: 1})
	orders := w.src.Topic(workload.TableOrders)
	w.rawProduce(
		&kgo.Record{Topic: w.src.TransactionTopic(), Value: dbzEnd("tx-9", "test.orders", 2, "test.audit_log", 1)},
		&kgo.Record{Topic: orders, Value: orderEvent(1, "tx-9", 1, 1)},
	)
	in, logs := w.newInput("g-missing", "")
	ctx, cancel := context.WithTimeout(context.Background(), 3500*time.Millisecond)
	_, _, err := in.ReadBatch(ctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "nothing is emitted partly")
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), `transaction \"tx-9\"`) }, 20*time.Second, 50*time.Millisecond)
	assert.Contains(t, logs.String(), "topic dbserver1.test.orders (collections test.orders): seen 1 of 2")
	assert.NotContains(t, logs.String(), "audit_log", "the unconsumed collection is not waited for")

	w.rawProduce(&kgo.Record{Topic: orders, Value: orderEvent(2, "tx-9", 2, 2)})
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	batch, ack, err := in.ReadBatch(ctx)
	require.NoError(t, err)
	require.Len(t, batch, 2, "the transaction whole")
	require.NoError(t, ack(ctx, nil))
}

// At a tiny max_buffered_bytes the input still completes every transaction
// (only the partitions the oldest transaction needs are read) and says so.
func TestBufferBoundStillCompletes(t *testing.T) {
	w := newKWorld(t, workload.DebeziumOptions{Partitions: 2, LargeEvery: 3, LargeSize: 10, Seed: 41})
	w.produce(60)
	in, logs := w.newInput("g-bound", "max_buffered_bytes: 2KiB\nmissing_events_timeout: 100ms\n")
	s := newSink(t)
	readUntil(t, in, s, 30*time.Second, w.converged(s))
	in.mu.Lock()
	hits := in.asm.stats.boundHits
	in.mu.Unlock()
	assert.Positive(t, hits, "the bound was hit")
	// The report samples the state every 25 ms: a bound held for less is
	// not logged (the report's text is TestBufferBound's).
	t.Logf("bound reached %d times; reported: %v", hits, strings.Contains(logs.String(), "max_buffered_bytes"))
}
