package debezium_txn

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// txnProduce writes recs to the transaction topic in one Kafka transaction,
// committed or aborted.
func (w *kworld) txnProduce(commit bool, recs ...*kgo.Record) {
	w.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(w.cluster.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionalID("readback-resume"))
	require.NoError(w.t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(w.t, cl.BeginTransaction())
	require.NoError(w.t, cl.ProduceSync(ctx, recs...).FirstErr())
	require.NoError(w.t, cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)))
}

// A piece read in many attempts, each running out after a few milliseconds
// (a poll cut short, fetches left buffered in the client between attempts),
// whose offsets hold committed and aborted Kafka transactions and their
// control records, and which ends on an aborted record or a control record
// (the log's last): every committed END is returned once, in offset order,
// no aborted one, and the piece is done.
func TestEndReaderResumedOftenLosesAndDoublesNothing(t *testing.T) {
	w := newKWorld(t, workload.DebeziumOptions{Partitions: 1})
	topic := w.src.TransactionTopic()
	pair := func(id string) []*kgo.Record {
		return []*kgo.Record{{Topic: topic, Value: dbzBegin(id)}, {Topic: topic, Value: dbzEnd(id, "test.orders", 1)}}
	}
	w.txnProduce(true, pair("a0")...)  // 0, 1; commit marker 2
	w.txnProduce(false, pair("x0")...) // 3, 4 aborted; marker 5
	w.rawProduce(pair("r1")...)        // 6, 7
	w.txnProduce(true, pair("a1")...)  // 8, 9; marker 10
	w.txnProduce(false, pair("x1")...) // 11, 12 aborted; marker 13, the log's last record
	want := []endAt{{off: 1, id: "a0"}, {off: 7, id: "r1"}, {off: 9, id: "a1"}}

	conf, err := ConfigSpec().ParseYAML(w.yaml("g-endreader-resume", "resend_window: 6\n"), nil)
	require.NoError(t, err)
	in, err := New(conf, service.MockResources())
	require.NoError(t, err)

	// Up to the log's end (its last offsets an aborted transaction and its
	// marker, nothing after them), then, with more written, past it.
	for _, hi := range []int64{14, 13, 12, 11, 16} {
		if hi == 16 {
			w.rawProduce(pair("r2")...) // 14, 15
		}
		r := &endReader{in: in}
		var got []endAt
		next, attempts := int64(0), 0
		deadline := time.Now().Add(time.Minute)
		// The first attempt's bound has passed before it starts, so every
		// piece is read over two attempts at least, however fast the
		// machine; the later bounds grow from 1 ms.
		for bound := time.Duration(0); ; bound = min(max(2*bound, time.Millisecond), 200*time.Millisecond) {
			attempts++
			require.True(t, time.Now().Before(deadline), "hi %d: not done after %d attempts, at offset %d", hi, attempts, next)
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			ends, reached, err := r.read(ctx, next, hi)
			cancel()
			got = append(got, ends...)
			require.GreaterOrEqual(t, reached, next, "hi %d: never goes back", hi)
			next = reached
			if err == nil {
				break
			}
			require.True(t, errors.Is(err, context.DeadlineExceeded), "hi %d: %v", hi, err)
		}
		r.close()
		assert.Greater(t, attempts, 1, "hi %d: read over several attempts", hi)
		assert.Equal(t, hi, next, "hi %d", hi)
		wantHere := want
		if hi == 16 {
			wantHere = append(wantHere, endAt{off: 15, id: "r2"})
		}
		assert.Equal(t, wantHere, got, "hi %d: every committed END once, after %d attempts", hi, attempts)
	}
}
