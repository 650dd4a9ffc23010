package workload

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/testkit/kafka"
)

// The consistency invariant the end-to-end readers rely on: after every whole
// transaction, each order's total equals the sum of its items and no item is
// orphaned.
func TestModelKeepsTotalsEqualToItems(t *testing.T) {
	g := NewGenerator(Options{Partitions: 3, Seed: 42, UpdateRatio: 0.4, DeleteRatio: 0.2, Events: true})
	m := NewModel()
	kinds := map[string]int{}
	for i := 0; i < 3000; i++ {
		tx := g.Next(int32(i % 3))
		m.Apply(tx)
		for _, c := range tx.Changes {
			if c.Table == TableEvents {
				kinds[c.Row["kind"].(string)]++
			}
		}
		if i%100 == 0 {
			checkModel(t, m)
		}
	}
	checkModel(t, m)
	assert.Greater(t, kinds["create"], 0)
	assert.Greater(t, kinds["update"], 0)
	assert.Greater(t, kinds["delete"], 0)
	assert.Len(t, m.Snapshot().Events, 3000, "one event per transaction")
}

func checkModel(t *testing.T, m *Model) {
	t.Helper()
	s := m.Snapshot()
	sums := map[string]int64{}
	for _, it := range s.Items {
		f := strings.Split(it, "|")
		qty, _ := strconv.ParseInt(f[3], 10, 64)
		sums[f[0]] += qty * cents(t, f[4])
	}
	orders := map[string]bool{}
	for _, o := range s.Orders {
		f := strings.Split(o, "|")
		orders[f[0]] = true
		require.Equal(t, cents(t, f[2]), sums[f[0]], "order %s total differs from its items", f[0])
	}
	for id := range sums {
		require.True(t, orders[id], "items of order %s have no order", id)
	}
}

func cents(t *testing.T, s string) int64 {
	whole, frac, ok := strings.Cut(s, ".")
	require.True(t, ok, s)
	w, err := strconv.ParseInt(whole, 10, 64)
	require.NoError(t, err)
	f, err := strconv.ParseInt(frac, 10, 64)
	require.NoError(t, err)
	return w*100 + f
}

func TestPartitionsNeverShareKeys(t *testing.T) {
	g := NewGenerator(Options{Partitions: 4, Seed: 1})
	owner := map[int64]int32{}
	for i := 0; i < 2000; i++ {
		tx := g.Next(int32(i % 4))
		for _, c := range tx.Changes {
			id := asInt(c.Row["order_id"])
			if p, ok := owner[id]; ok {
				require.Equal(t, p, tx.Partition, "order %d written from two partitions", id)
			}
			owner[id] = tx.Partition
		}
	}
}

func TestEnvelopeShape(t *testing.T) {
	g := NewGenerator(Options{Partitions: 1, Seed: 3})
	tx := g.Next(0)
	evs, err := Envelope(tx)
	require.NoError(t, err)
	require.Len(t, evs, len(tx.Changes)+2)
	var first, last, data map[string]any
	require.NoError(t, json.Unmarshal(evs[0], &first))
	require.NoError(t, json.Unmarshal(evs[len(evs)-1], &last))
	require.NoError(t, json.Unmarshal(evs[1], &data))
	assert.Equal(t, "TXN_BEGIN", first["type"])
	assert.Equal(t, "TXN_END", last["type"])
	assert.Equal(t, "DATA", data["type"])
	assert.Equal(t, tx.ID, data["txnId"])
	assert.Equal(t, Database, data["database"])
	var row map[string]any
	require.NoError(t, json.Unmarshal([]byte(data["json"].(string)), &row), "json carries the row as a JSON string")
	assert.Contains(t, row, "order_id")
}

// Aborted producer transactions must not enter the model, and a read_committed
// consumer must see exactly the committed transactions' records.
func TestProducerCommitsAndAbortsKafkaTransactions(t *testing.T) {
	c := kafka.New(t, kafka.Topic("cdc", 2, nil))

	g := NewGenerator(Options{Partitions: 2, Seed: 9})
	m := NewModel()
	p, err := NewProducer(ProducerOptions{Brokers: c.ListenAddrs(), Topic: "cdc", AbortRatio: 0.3, TxnsPerKafkaTxn: 2}, g, m)
	require.NoError(t, err)
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, p.Produce(ctx, 40))
	assert.Equal(t, int64(40), p.Stats.Committed.Load())
	assert.Greater(t, p.Stats.Aborted.Load(), int64(0))
	assert.Equal(t, 40, m.Txns())

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("cdc"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	var got int64
	for got < p.Stats.Records.Load() {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		fs.EachRecord(func(*kgo.Record) { got++ })
	}
	// Nothing more may arrive: aborted records are filtered out.
	extraCtx, extraCancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer extraCancel()
	cl.PollFetches(extraCtx).EachRecord(func(*kgo.Record) { got++ })
	assert.Equal(t, p.Stats.Records.Load(), got)
}

// The wide workload spreads each transaction's rows over its tables, keeps
// keys apart per partition, and its model is what the rows say.
func TestWideWorkload(t *testing.T) {
	g := NewGenerator(Options{Partitions: 3, Seed: 5, Tables: 12})
	m := NewModel()
	seen := map[string]bool{}
	updates := 0
	ids := map[int64]int32{}
	for i := 0; i < 600; i++ {
		tx := g.Next(int32(i % 3))
		require.Len(t, tx.Changes, RowsPerWideTxn)
		for _, c := range tx.Changes {
			seen[c.Table] = true
			id := asInt(c.Row["id"])
			if p, ok := ids[id]; ok {
				require.Equal(t, tx.Partition, p, "a key stays in its partition")
				updates++
			}
			ids[id] = tx.Partition
		}
		m.Apply(tx)
	}
	assert.Len(t, seen, 12, "every table gets rows")
	assert.Greater(t, updates, 300, "some rows update earlier ones")
	snap := m.WideSnapshot()
	total := 0
	for _, lines := range snap {
		total += len(lines)
	}
	assert.Equal(t, len(ids), total, "one row per key")
	assert.Contains(t, WideSchema(2), "`test`.`wide_001`")
}
