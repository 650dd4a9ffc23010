package starrocks_txn

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	_ "github.com/starrocks-txn/benthos-starrocks/processor/txn_assembler"
)

// exactly_once behind a txn_assembler whose source has no offsets (no
// source_offset field, no kafka_offset metadata): the assembler numbers
// such a partition's messages by arrival, 0, 1, 2 …, from 0 again at every
// start. That number orders the messages of one run; it is no source
// position, and exactly_once's progress compares source positions.

// arrivalPipeline runs one pipeline — a non-Kafka input, the txn_assembler
// without source_offset, starrocks_txn exactly_once into the emulator with
// dead_letter — for as long as the test sends it transactions; stop ends it
// (a restart is a new arrivalPipeline).
type arrivalPipeline struct {
	produce func(context.Context, service.MessageBatch) error
	stream  *service.Stream
	done    chan struct{}
}

func startArrivalPipeline(t *testing.T, e *emulator.Emulator, dlName string) *arrivalPipeline {
	t.Helper()
	sb := service.GlobalEnvironment().Clone().NewStreamBuilder()
	require.NoError(t, sb.SetLoggerYAML(streamLogYAML()))
	produce, err := sb.AddBatchProducerFunc()
	require.NoError(t, err)
	sb.SetThreads(1)
	require.NoError(t, sb.AddProcessorYAML("txn_assembler: { format: envelope }"))
	require.NoError(t, sb.AddOutputYAML(fmt.Sprintf(`
starrocks_txn:
  load_urls: [ %s ]
  mysql_address: %s
  semantic: exactly_once
  pipeline_id: arrival
  schema_evolution: ignore
  commit_interval: 100ms
  label_state_wait: 300ms
  retry_backoff: { initial_interval: 20ms, max_interval: 200ms }
  dead_letter:
    starrocks_txn_test_capture: { name: %s }
`, e.FEURL(), e.MySQLAddr(), dlName)))
	stream, err := sb.Build()
	require.NoError(t, err)
	p := &arrivalPipeline{produce: produce, stream: stream, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		_ = stream.Run(context.Background())
	}()
	t.Cleanup(p.stop)
	return p
}

func (p *arrivalPipeline) stop() {
	_ = p.stream.StopWithin(5 * time.Second)
	<-p.done
}

// sendOrders sends one envelope source transaction per order id, each in a
// batch of its own (BEGIN, the order row, END) on partition 7, and waits
// until each is acknowledged.
func (p *arrivalPipeline) sendOrders(t *testing.T, ids ...int64) {
	t.Helper()
	for _, id := range ids {
		txn := fmt.Sprintf("txn-%d", id)
		row := fmt.Sprintf(`{"order_id":%d,"customer_id":1,"total_amount":"1.00","order_status":"ok"}`, id)
		batch := service.MessageBatch{
			service.NewMessage([]byte(fmt.Sprintf(`{"partition":7,"txnId":%q,"type":"TXN_BEGIN"}`, txn))),
			service.NewMessage([]byte(fmt.Sprintf(`{"partition":7,"txnId":%q,"type":"DATA","database":"test","table":"orders","json":%q}`, txn, row))),
			service.NewMessage([]byte(fmt.Sprintf(`{"partition":7,"txnId":%q,"type":"TXN_END"}`, txn))),
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := p.produce(ctx, batch)
		cancel()
		require.NoError(t, err, "transaction %s acknowledged", txn)
	}
}

// A pipeline restarted: the transactions it sends after the restart are
// numbered 0, 1, 2 … again, below the progress its first run committed.
// Taken for source positions they were acknowledged as replays and never
// loaded: data lost without an error. Every acknowledged transaction must be
// either visible in StarRocks or dead-lettered whole with a reason that
// says what to set — with these offsets, dead-lettered.
func TestExactlyOnceArrivalCounterOffsetsAreNeverTakenForSourcePositions(t *testing.T) {
	e := startEmulator(t)
	dlName := "dl-arrival"
	captures.Delete(dlName)
	t.Cleanup(func() { captures.Delete(dlName) })

	first := startArrivalPipeline(t, e, dlName)
	first.sendOrders(t, 1, 2, 3)
	first.stop()

	second := startArrivalPipeline(t, e, dlName)
	second.sendOrders(t, 4, 5)
	second.stop()

	rows, err := e.Store().Rows("test", "orders")
	require.NoError(t, err)
	visible := map[string]bool{}
	for _, r := range rows {
		visible[fmt.Sprintf("txn-%d", toInt(r["order_id"]))] = true
	}
	d, ok := captures.Load(dlName)
	dead := map[string]bool{}
	var reasons []string
	if ok {
		dl := d.(*fakeDL)
		for _, id := range dl.txnIDs() {
			dead[id] = true
		}
		dl.mu.Lock()
		for _, b := range dl.batches {
			reason, _ := b[0].MetaGet(deadLetterReasonKey)
			reasons = append(reasons, reason)
		}
		dl.mu.Unlock()
	}
	for id := int64(1); id <= 5; id++ {
		txn := fmt.Sprintf("txn-%d", id)
		assert.True(t, visible[txn] || dead[txn], "%s was acknowledged but is neither in StarRocks nor dead-lettered: lost (visible %v, dead-lettered %v)", txn, visible, dead)
		assert.False(t, visible[txn] && dead[txn], "%s both loaded and dead-lettered", txn)
	}
	assert.Empty(t, visible, "an arrival counter cannot tell a replay from new data after a restart: nothing is loaded under exactly_once")
	assert.Len(t, reasons, 5, "each transaction dead-lettered once, whole")
	for _, r := range reasons {
		assert.True(t, strings.Contains(r, "arrival counter") && strings.Contains(r, "source_offset field") && strings.Contains(r, "kafka_offset"), "the reason says what the offset is and what to set: %s", r)
	}
}
