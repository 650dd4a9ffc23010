package debezium_txn

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// The workload's Debezium traffic, with and without schemas, fed through the
// decoder and the assembler in a shuffled cross-partition order (each
// partition's order kept) and committed as it is emitted, reproduces the
// source tables exactly: snapshot, creates, updates, deletes with
// tombstones, large transactions over every topic, re-sent copies, and a
// collection that is not consumed.
func TestWorkloadTrafficReproducesTheSource(t *testing.T) {
	for _, schemas := range []bool{false, true} {
		src := workload.NewDebeziumSource(workload.DebeziumOptions{Partitions: 3, Schemas: schemas, SnapshotOrders: 20,
			LargeEvery: 10, LargeSize: 8, ResendRatio: 0.15, Seed: 11})
		want := workload.NewModel()
		snap, recs := src.Snapshot()
		want.Apply(snap)
		for i := 0; i < 400; i++ {
			dt := src.Next()
			want.Apply(dt.Txn)
			recs = append(recs, dt.Records...)
		}
		consumed := map[string]bool{}
		for _, tpc := range src.DataTopics() {
			consumed[tpc] = true
		}
		cfg := assemblerConfig{
			partition: src.TransactionTopic(), txnTopic: src.TransactionTopic(),
			topicOf:          func(c string) string { return "dbserver1." + c },
			consumed:         func(t string) bool { return consumed[t] },
			maxBufferedBytes: 1 << 30, missingTimeout: time.Minute, resendWindow: 1000,
			untransacted: untransactedError, truncate: truncateError, valueWriter: valueWriter{loc: time.UTC},
		}
		a := newAssembler(cfg)
		queues := map[tp][]workload.Record{}
		var order []tp
		for _, r := range recs {
			k := tp{r.Topic, r.Partition}
			if r.Topic != src.TransactionTopic() && !consumed[r.Topic] {
				continue
			}
			if _, ok := queues[k]; !ok {
				order = append(order, k)
				if k.topic != src.TransactionTopic() {
					a.assign(k)
				}
			}
			queues[k] = append(queues[k], r)
		}
		a.txnStart(0)
		got := workload.NewModel()
		rng := rand.New(rand.NewPCG(5, 6))
		offs := map[tp]int64{}
		now := time.Unix(0, 0)
		emitted := 0
		for {
			var live []tp
			for _, k := range order {
				if len(queues[k]) > 0 {
					live = append(live, k)
				}
			}
			if len(live) == 0 {
				break
			}
			k := live[rng.IntN(len(live))]
			r := queues[k][0]
			queues[k] = queues[k][1:]
			if k.topic == src.TransactionTopic() {
				require.NoError(t, a.addTxnMeta(offs[k], r.Value, now))
			} else {
				require.NoError(t, a.addData(recMeta{tp: k, offset: offs[k]}, r.Value, now))
			}
			offs[k]++
			if after, last, ok := a.wantEnds(); ok {
				ends := map[tp]int64{}
				for _, k := range order {
					ends[k] = offs[k] + int64(len(queues[k]))
				}
				a.endsListed(after, last, ends)
			}
			for em := a.next(50); em != nil; em = a.next(50) {
				var changes []workload.Change
				for _, m := range em.msgs {
					var row workload.Row
					require.NoError(t, json.Unmarshal(m.ev.row, &row))
					_, del := row["__op"]
					changes = append(changes, workload.Change{Table: m.ev.table, Row: row, Delete: del})
				}
				got.Apply(workload.Txn{Changes: changes})
				a.acked(em)
				emitted++
			}
		}
		assert.Equal(t, want.Snapshot(), got.Snapshot(), "schemas %v", schemas)
		assert.Positive(t, a.stats.duplicates, "the re-sent copies were dropped")
		assert.Positive(t, a.stats.resentSkipped)
		assert.Positive(t, a.stats.snapshotRows)
		assert.Positive(t, a.stats.tombstone)
		assert.Zero(t, a.buffered)
		assert.Empty(t, a.problems(now.Add(time.Hour)))
		t.Logf("schemas %v: %d emissions, %d transactions, %d snapshot rows, %d duplicates dropped, %d re-sent transactions skipped",
			schemas, emitted, a.stats.txnsEmitted, a.stats.snapshotRows, a.stats.duplicates, a.stats.resentSkipped)
	}
}
