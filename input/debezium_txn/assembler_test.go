package debezium_txn

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/kafka/consumer"
)

// A transaction spread over two topics and three partitions is emitted once
// its END and every consumed event arrived, in total_order, whole, with
// source offsets END×2^24+i and the END flag on the last message; the
// collection that is not consumed is ignored.
func TestAssembleAcrossPartitions(t *testing.T) {
	f := newFeeder(t, testConfig(), orders0, orders1, items0)
	f.data(orders1, dbzEvent(opCreate, "orders", 2, "g:1", 3, 2))
	f.data(items0, dbzEvent(opCreate, "items", 9, "g:1", 2, 1))
	assert.Empty(t, f.drain(), "no END yet")
	f.meta(dbzBegin("g:1"))
	end := f.meta(dbzEnd("g:1", "test.orders", 2, "test.items", 1, "test.audit", 4))
	assert.Empty(t, f.drain(), "an orders event is missing")
	f.data(orders0, dbzEvent(opCreate, "orders", 1, "g:1", 1, 1))
	ems := f.drain()
	require.Len(t, ems, 1)
	assert.Equal(t, []string{
		"shop.transaction|g:1|" + itoa(end<<24+0) + "|false|g:1-1",
		"shop.transaction|g:1|" + itoa(end<<24+1) + "|false|g:1-2",
		"shop.transaction|g:1|" + itoa(end<<24+2) + "|true|g:1-3",
	}, rows(ems[0]))
	assert.Equal(t, int64(0), f.a.buffered)
}

// Transactions are emitted in END order even when a later one completes
// first.
func TestEmitInEndOrder(t *testing.T) {
	f := newFeeder(t, testConfig(), orders0, items0)
	f.meta(dbzEnd("a", "test.orders", 1, "test.items", 1))
	f.meta(dbzEnd("b", "test.orders", 1))
	f.data(orders0, dbzEvent(opUpdate, "orders", 1, "b", 1, 1))
	assert.Empty(t, f.drain(), "b waits for a")
	f.data(items0, dbzEvent(opCreate, "items", 1, "a", 2, 1))
	f.data(orders0, dbzEvent(opCreate, "orders", 1, "a", 1, 1))
	assert.Equal(t, []string{"a", "b"}, txnIDs(f.drain()))
}

// collection_topics: two collections routed into one topic count together.
func TestRoutedCollections(t *testing.T) {
	cfg := testConfig()
	routes := map[string]string{"test.orders_1": "shop.test.orders", "test.orders_2": "shop.test.orders"}
	cfg.topicOf = func(c string) string {
		if r, ok := routes[c]; ok {
			return r
		}
		return testPrefix + "." + c
	}
	f := newFeeder(t, cfg, orders0)
	f.meta(dbzEnd("x", "test.orders_1", 1, "test.orders_2", 1))
	f.data(orders0, dbzEvent(opCreate, "orders_1", 1, "x", 1, 1))
	assert.Empty(t, f.drain())
	// Same data_collection_order, other collection: not a duplicate.
	f.data(orders0, dbzEvent(opCreate, "orders_2", 1, "x", 2, 1))
	assert.Equal(t, []string{"x"}, txnIDs(f.drain()))
}

// Re-sent events are loaded once; a second END is ignored; a transaction
// re-sent whole after it committed is skipped and its events dropped.
func TestResentEventsAndTransactions(t *testing.T) {
	f := newFeeder(t, testConfig(), orders0)
	f.data(orders0, dbzEvent(opCreate, "orders", 1, "a", 1, 1))
	f.data(orders0, dbzEvent(opCreate, "orders", 1, "a", 1, 1))
	f.meta(dbzEnd("a", "test.orders", 1))
	ems := f.drain()
	require.Len(t, ems, 1)
	assert.Len(t, ems[0].msgs, 1)
	// While emitted: a re-sent END and event are ignored.
	f.meta(dbzEnd("a", "test.orders", 1))
	f.data(orders0, dbzEvent(opCreate, "orders", 1, "a", 1, 1))
	assert.Empty(t, f.drain())
	f.a.committed(testTxnTopic, ems[0].msgs[0].sourceOffset)
	// After the commit: the whole transaction re-sent (events and END).
	f.data(orders0, dbzEvent(opCreate, "orders", 1, "a", 1, 1))
	f.meta(dbzBegin("a"))
	f.meta(dbzEnd("a", "test.orders", 1))
	assert.Empty(t, f.drain())
	assert.Equal(t, int64(1), f.a.stats.resentSkipped)
	assert.Equal(t, int64(4), f.a.stats.duplicates)
	data, txnFloor := f.a.floors()
	assert.Equal(t, f.next[orders0], data[orders0], "the re-sent events hold nothing")
	assert.Equal(t, f.txn, txnFloor)
}

// The resend memory is a window: the oldest ids are forgotten.
func TestResendWindow(t *testing.T) {
	cfg := testConfig()
	cfg.resendWindow = 2
	a := newAssembler(cfg)
	for _, id := range []string{"a", "b", "c"} {
		a.remember(id, doneTxn{whole: true})
	}
	_, hasA := a.done["a"]
	_, hasC := a.done["c"]
	assert.False(t, hasA)
	assert.True(t, hasC)
	assert.Len(t, a.done, 2)
}

// More events than the END counts for a topic is a mapping error: never
// emitted, reported with the collections.
func TestOvercountIsReported(t *testing.T) {
	f := newFeeder(t, testConfig(), orders0)
	f.meta(dbzEnd("x", "test.orders", 1))
	f.data(orders0, dbzEvent(opCreate, "orders", 1, "x", 1, 1))
	f.data(orders0, dbzEvent(opCreate, "orders", 2, "x", 2, 2))
	assert.Empty(t, f.drain())
	ps := f.a.problems(f.now)
	require.Len(t, ps, 1)
	assert.Contains(t, ps[0].msg, `transaction "x"`)
	assert.Contains(t, ps[0].msg, "collection_topics")
}

// A transaction whose END arrived and that misses events is reported after
// missing_events_timeout with its id, each topic's collections and counts;
// it is never emitted partly.
func TestMissingEventsReported(t *testing.T) {
	f := newFeeder(t, testConfig(), orders0, items0)
	f.meta(dbzEnd("g:7", "test.orders", 2, "test.items", 1))
	f.data(orders0, dbzEvent(opCreate, "orders", 1, "g:7", 1, 1))
	f.data(items0, dbzEvent(opCreate, "items", 1, "g:7", 3, 1))
	assert.Empty(t, f.a.problems(f.now.Add(59*time.Second)))
	ps := f.a.problems(f.now.Add(61 * time.Second))
	require.Len(t, ps, 1)
	assert.True(t, ps[0].missing)
	assert.Contains(t, ps[0].msg, `transaction "g:7"`)
	assert.Contains(t, ps[0].msg, "topic shop.test.orders (collections test.orders): seen 1 of 2")
	assert.Contains(t, ps[0].msg, "topic shop.test.items (collections test.items): seen 1 of 1")
	assert.Empty(t, f.drain())
}

// Events whose END never comes are reported once the transaction topic is
// read to its end.
func TestOrphanEventsReported(t *testing.T) {
	f := newFeeder(t, testConfig(), orders0)
	f.data(orders0, dbzEvent(opCreate, "orders", 1, "lost", 1, 1))
	later := f.now.Add(2 * time.Minute)
	assert.Empty(t, f.a.problems(later), "the transaction topic's end is unknown")
	f.a.txnStart(0)
	f.a.txnHighWatermark(0)
	ps := f.a.problems(later)
	require.Len(t, ps, 1)
	assert.Contains(t, ps[0].msg, `"lost"`)
	assert.Contains(t, ps[0].msg, "provide.transaction.metadata")
}

// The floors hold the lowest offset of anything StarRocks has not
// committed, on every data partition and on the transaction topic.
func TestFloors(t *testing.T) {
	f := newFeeder(t, testConfig(), orders0, items0)
	f.data(orders0, dbzEvent(opCreate, "orders", 1, "a", 1, 1)) // 0
	f.data(items0, dbzEvent(opCreate, "items", 1, "b", 1, 1))   // 0
	f.data(orders0, dbzEvent(opCreate, "orders", 2, "b", 2, 1)) // 1
	f.meta(dbzBegin("a"))                                       // 0
	f.meta(dbzEnd("a", "test.orders", 1))                       // 1
	f.meta(dbzBegin("b"))                                       // 2
	f.meta(dbzEnd("b", "test.orders", 1, "test.items", 1))      // 3
	ems := f.drain()
	require.Equal(t, []string{"a", "b"}, txnIDs(ems))
	data, txn := f.a.floors()
	assert.Equal(t, map[tp]int64{orders0: 0, items0: 0}, data)
	assert.Equal(t, int64(1), txn)
	// a commits.
	f.a.committed(testTxnTopic, ems[0].msgs[0].sourceOffset)
	data, txn = f.a.floors()
	assert.Equal(t, map[tp]int64{orders0: 1, items0: 0}, data)
	assert.Equal(t, int64(3), txn)
	// b commits: everything read is free.
	f.a.committed(testTxnTopic, ems[1].msgs[1].sourceOffset)
	data, txn = f.a.floors()
	assert.Equal(t, map[tp]int64{orders0: 2, items0: 1}, data)
	assert.Equal(t, int64(4), txn)
}

// Acknowledgements release out of order; the floors follow the lowest
// unreleased offset.
func TestAckedOutOfOrder(t *testing.T) {
	f := newFeeder(t, testConfig(), orders0)
	f.data(orders0, dbzEvent(opCreate, "orders", 1, "a", 1, 1))
	f.data(orders0, dbzEvent(opCreate, "orders", 2, "b", 1, 1))
	f.meta(dbzEnd("a", "test.orders", 1))
	f.meta(dbzEnd("b", "test.orders", 1))
	ems := f.drain()
	require.Len(t, ems, 2)
	f.a.acked(ems[1])
	data, txn := f.a.floors()
	assert.Equal(t, int64(0), data[orders0])
	assert.Equal(t, int64(0), txn)
	f.a.acked(ems[0])
	data, txn = f.a.floors()
	assert.Equal(t, int64(2), data[orders0])
	assert.Equal(t, int64(2), txn)
}

// exactly_once: transactions at or below the progress are skipped and their
// events released.
func TestProgressSkips(t *testing.T) {
	f := newFeeder(t, testConfig(), orders0)
	f.a.setProgress(1)
	f.data(orders0, dbzEvent(opCreate, "orders", 1, "a", 1, 1))
	f.meta(dbzBegin("a"))
	f.meta(dbzEnd("a", "test.orders", 1))
	f.data(orders0, dbzEvent(opCreate, "orders", 2, "b", 1, 1))
	f.meta(dbzEnd("b", "test.orders", 1))
	assert.Equal(t, []string{"b"}, txnIDs(f.drain()))
	assert.Equal(t, int64(1), f.a.stats.progressSkipped)
	data, txn := f.a.floors()
	assert.Equal(t, int64(1), data[orders0])
	assert.Equal(t, int64(2), txn)
}

// Snapshot rows are one-row transactions of their side partition, emitted
// in partition order; a streamed transaction waits until every partition's
// snapshot is over and every snapshot row is committed.
func TestSnapshotThenStreaming(t *testing.T) {
	f := newFeeder(t, testConfig(), orders0, orders1, items0)
	f.data(orders0, snapRow("orders", 1, "first"))
	f.data(orders0, snapRow("orders", 2, "true"))
	f.data(orders1, snapRow("orders", 3, "true"))
	f.data(items0, snapRow("items", 1, "true"))
	ems := f.drain()
	require.Equal(t, []string{"snapshot:shop.test.items/0@0", "snapshot:shop.test.orders/0@0", "snapshot:shop.test.orders/0@1", "snapshot:shop.test.orders/1@0"}, txnIDs(ems))
	assert.Equal(t, "shop.test.orders/0|snapshot:shop.test.orders/0@1|1|true|snap", rows(ems[1])[1])
	assert.Equal(t, int64(4), f.a.stats.snapshotRows)

	// orders/0 streams, the others' snapshots are still open.
	f.data(orders0, dbzEvent(opCreate, "orders", 10, "s1", 1, 1))
	f.meta(dbzEnd("s1", "test.orders", 1))
	assert.Empty(t, f.drain())
	assert.Contains(t, f.a.holdReason(f.a.ends[0]), "snapshot is not over")
	// The last snapshot row arrives on orders/1; items/0 is read up to the
	// end listed after it.
	f.data(orders1, snapRow("orders", 4, "last"))
	after, afterLast, ok := f.a.wantEnds()
	require.True(t, ok)
	require.True(t, afterLast)
	f.a.endsListed(after, afterLast, map[tp]int64{orders0: f.next[orders0], orders1: f.next[orders1], items0: f.next[items0]})
	assert.False(t, f.a.snapshotOpen())
	last := f.drain()
	require.Equal(t, []string{"snapshot:shop.test.orders/1@1"}, txnIDs(last), "s1 waits for the snapshot rows' commit")
	for _, em := range append(ems, last...) {
		f.a.committed(em.msgs[0].partition, em.msgs[len(em.msgs)-1].sourceOffset)
	}
	assert.Equal(t, []string{"s1"}, txnIDs(f.drain()))
}

// Without a `last` marker a partition's snapshot is over at its first
// streamed event.
func TestSnapshotOverAtFirstStreamedEvent(t *testing.T) {
	f := newFeeder(t, testConfig(), orders0, items0)
	f.data(orders0, snapRow("orders", 1, "true"))
	f.data(items0, snapRow("items", 1, "true"))
	for _, em := range f.drain() {
		f.a.acked(em)
	}
	f.data(orders0, dbzEvent(opCreate, "orders", 5, "s", 1, 1))
	f.meta(dbzEnd("s", "test.orders", 1))
	assert.Empty(t, f.drain(), "items/0 still snapshots")
	f.data(items0, dbzEvent(opCreate, "items", 5, "s2", 1, 1))
	assert.Equal(t, []string{"s"}, txnIDs(f.drain()))
}

// Start gate: no transaction before every assigned partition has delivered
// a record or is known empty.
func TestStartGate(t *testing.T) {
	f := newFeeder(t, testConfig(), orders0, items0)
	f.data(orders0, dbzEvent(opCreate, "orders", 1, "a", 1, 1))
	f.meta(dbzEnd("a", "test.orders", 1))
	assert.Empty(t, f.drain())
	assert.Contains(t, f.a.holdReason(f.a.ends[0]), "shop.test.items/0")
	f.a.markEmpty(items0)
	assert.Equal(t, []string{"a"}, txnIDs(f.drain()))
}

// A side row and the transactions around it keep their partition order
// across the two partition identities.
func TestSideRowBarrier(t *testing.T) {
	cfg := testConfig()
	cfg.untransacted = untransactedSingleRow
	f := newFeeder(t, cfg, orders0)
	f.data(orders0, dbzEvent(opCreate, "orders", 1, "a", 1, 1)) // 0
	f.data(orders0, dbzEvent(opUpdate, "orders", 1, "", 0, 0))  // 1: untransacted
	f.data(orders0, dbzEvent(opUpdate, "orders", 1, "b", 1, 1)) // 2
	f.meta(dbzEnd("a", "test.orders", 1))
	f.meta(dbzEnd("b", "test.orders", 1))
	ems := f.drain()
	require.Equal(t, []string{"a"}, txnIDs(ems), "the side row waits for a's commit, b for the side row")
	f.a.committed(testTxnTopic, ems[0].msgs[0].sourceOffset)
	side := f.drain()
	require.Equal(t, []string{"row:shop.test.orders/0@1"}, txnIDs(side))
	assert.Equal(t, int64(1), side[0].msgs[0].sourceOffset)
	assert.Empty(t, f.drain())
	f.a.committed("shop.test.orders/0", 1)
	assert.Equal(t, []string{"b"}, txnIDs(f.drain()))
	assert.Equal(t, int64(1), f.a.stats.untransactedRows)
}

// By default an event without a transaction block stops its partition with
// an error naming topic, partition and offset.
func TestUntransactedIsAnError(t *testing.T) {
	f := newFeeder(t, testConfig(), orders0)
	f.data(orders0, dbzEvent(opCreate, "orders", 1, "a", 1, 1))
	err := f.dataErr(orders0, dbzEvent(opUpdate, "orders", 1, "", 0, 0))
	require.ErrorContains(t, err, "shop.test.orders/0 offset 1")
	require.ErrorContains(t, err, "events_without_transaction")
	require.ErrorIs(t, f.dataErr(orders0, dbzEvent(opCreate, "orders", 2, "b", 1, 1)), errPartitionStopped)
	f.meta(dbzEnd("a", "test.orders", 1))
	ems := f.drain()
	require.Len(t, ems, 1)
	f.a.acked(ems[0])
	data, _ := f.a.floors()
	assert.Equal(t, int64(1), data[orders0], "the floor stops at the bad record")
	ps := f.a.problems(f.now)
	require.NotEmpty(t, ps)
	assert.Contains(t, ps[0].msg, "stopped at offset 1")
}

// Truncates: held with an error by default, counted and skipped with
// on_truncate: skip.
func TestTruncate(t *testing.T) {
	trunc := []byte(`{"source":{"connector":"postgresql","schema":"test","table":"orders"},"op":"t","transaction":{"id":"t1","total_order":2,"data_collection_order":2}}`)
	for _, mode := range []string{truncateError, truncateSkip} {
		cfg := testConfig()
		cfg.truncate = mode
		f := newFeeder(t, cfg, orders0)
		f.data(orders0, dbzEvent(opCreate, "orders", 1, "t1", 1, 1))
		f.data(orders0, trunc)
		f.meta(dbzEnd("t1", "test.orders", 2))
		ems := f.drain()
		if mode == truncateError {
			assert.Empty(t, ems)
			ps := f.a.problems(f.now)
			require.Len(t, ps, 1)
			assert.Contains(t, ps[0].msg, "truncates test.orders")
			assert.Contains(t, ps[0].msg, "on_truncate: skip")
			continue
		}
		require.Len(t, ems, 1)
		assert.Len(t, ems[0].msgs, 1, "the truncate is counted, not loaded")
		assert.Equal(t, int64(1), f.a.stats.truncatesSkipped)
	}
}

// Tombstones and transactions with no consumed event hold nothing.
func TestTombstonesAndEmptyTransactions(t *testing.T) {
	f := newFeeder(t, testConfig(), orders0)
	f.data(orders0, dbzEvent(opDelete, "orders", 1, "d", 1, 1))
	f.data(orders0, nil)
	f.meta(dbzEnd("d", "test.orders", 1))
	f.meta(dbzEnd("audit-only", "test.audit", 3))
	ems := f.drain()
	require.Len(t, ems, 1)
	assert.True(t, strings.HasPrefix(string(ems[0].msgs[0].ev.row), `{"__op":1,`))
	assert.Equal(t, int64(1), f.a.stats.emptyTxns)
	f.a.acked(ems[0])
	data, txn := f.a.floors()
	assert.Equal(t, int64(2), data[orders0])
	assert.Equal(t, int64(2), txn)
}

// At the buffer bound the oldest transaction's missing topics are what may
// still be read, and the bound is reported.
func TestBufferBound(t *testing.T) {
	cfg := testConfig()
	cfg.maxBufferedBytes = 100
	f := newFeeder(t, cfg, orders0, items0)
	f.data(orders0, dbzEvent(opCreate, "orders", 1, "a", 1, 1))
	assert.Equal(t, readSet{txnTopic: true}, f.a.mustRead(), "no END yet: nothing tells which partitions")
	f.meta(dbzEnd("a", "test.orders", 1, "test.items", 1))
	assert.Equal(t, map[tp]bool{items0: true}, f.a.mustRead().parts)
	var found bool
	for _, p := range f.a.problems(f.now) {
		if p.key == "buffer" {
			found = true
			assert.Contains(t, p.msg, "max_buffered_bytes")
			assert.Contains(t, p.msg, `"a"`)
		}
	}
	assert.True(t, found)
}

// A data-topic record that is not a change event stops the partition with
// the topic, partition and offset named.
func TestNotAnEnvelopeStopsPartition(t *testing.T) {
	f := newFeeder(t, testConfig(), orders0)
	err := f.dataErr(orders0, []byte(`{"id":1,"name":"flat"}`))
	require.ErrorContains(t, err, "shop.test.orders/0 offset 0")
	require.ErrorContains(t, err, "ExtractNewRecordState")
}

// A record in a schema registry's wire format (Avro with Confluent's
// serializer: a zero byte, the schema id, the Avro body) stops the partition
// with what it is and the converter to use, not as a broken envelope.
func TestRegistryFramedValueNamesTheConverter(t *testing.T) {
	f := newFeeder(t, testConfig(), orders0)
	avro := append([]byte{0, 0, 0, 0, 42}, 0x02, 0x0c, 'k', 'e', 'y')
	err := f.dataErr(orders0, avro)
	require.ErrorContains(t, err, "shop.test.orders/0 offset 0: the value is in a schema registry's wire format (a zero byte and schema id 42, then Avro, Protobuf or JSON Schema), not JSON")
	require.ErrorContains(t, err, "value.converter=org.apache.kafka.connect.json.JsonConverter")
	assert.NotContains(t, err.Error(), "ExtractNewRecordState", "not a hint about the envelope")
}

func TestSourceOffsetNumbering(t *testing.T) {
	assert.Equal(t, int64(5), endOffsetOf(sourceOffset(5, maxTxnEvents-1)))
	assert.Less(t, sourceOffset(5, maxTxnEvents-1), sourceOffset(6, 0))
}

// A transaction that misses events of a topic no partition of which is read
// here yet (a new table's topic under regexp_topics, before the client's
// metadata shows it) says so, and names metadata_max_age; a topic that is
// read only misses events.
func TestMissingEventsNameATopicNotReadYet(t *testing.T) {
	f := newFeeder(t, testConfig(), orders0) // items' topic not assigned yet
	f.meta(dbzEnd("g:8", "test.orders", 1, "test.items", 1))
	f.data(orders0, dbzEvent(opCreate, "orders", 1, "g:8", 1, 1))
	ps := f.a.problems(f.now.Add(61 * time.Second))
	require.Len(t, ps, 1)
	assert.Contains(t, ps[0].msg, "topic shop.test.items (collections test.items): seen 0 of 1 — no partition of this topic is read here yet")
	assert.Contains(t, ps[0].msg, "metadata_max_age")
	assert.NotContains(t, ps[0].msg, "shop.test.orders (collections test.orders): seen 1 of 1 —")

	f.a.assign(items0)
	ps = f.a.problems(f.now.Add(61 * time.Second))
	require.Len(t, ps, 1)
	assert.NotContains(t, ps[0].msg, "is read here yet", "once assigned, the topic only misses events")
	assert.Empty(t, f.drain())
}

// The row slice of an emission whose messages are made goes back for the
// next emission, emptied (it keeps no row alive), with the count and the
// first transaction id the acknowledgement needs; the next transaction's
// rows in it are its own, in total order, whatever order they came in.
func TestEmissionRowsReused(t *testing.T) {
	f := newFeeder(t, testConfig(), orders0, items0)
	f.data(orders0, dbzEvent(opCreate, "orders", 1, "a", 1, 1))
	f.data(items0, dbzEvent(opCreate, "items", 2, "a", 2, 1))
	f.meta(dbzEnd("a", "test.orders", 1, "test.items", 1))
	ems := f.drain()
	require.Len(t, ems, 1)
	a := ems[0]
	require.Len(t, a.msgs, 2)
	rowsA := a.msgs[:cap(a.msgs)]
	f.a.recycleMsgs(a)
	assert.Nil(t, a.msgs)
	assert.Equal(t, 2, a.n)
	assert.Equal(t, "a", a.firstID)
	for i, m := range rowsA {
		assert.Zero(t, m, "row %d of a's slice still held", i)
	}

	// b's events come in reverse total order, over two partitions.
	f.data(items0, dbzEvent(opCreate, "items", 3, "b", 3, 1))
	f.data(orders0, dbzEvent(opUpdate, "orders", 1, "b", 2, 1))
	f.data(orders0, dbzEvent(opUpdate, "orders", 1, "b", 1, 2))
	f.meta(dbzEnd("b", "test.orders", 2, "test.items", 1))
	ems = f.drain()
	require.Len(t, ems, 1)
	b := ems[0]
	assert.Same(t, &rowsA[0], &b.msgs[:1][0], "b's rows reuse a's slice")
	got := rows(b)
	require.Len(t, got, 3)
	for i, want := range []string{"b-1", "b-2", "b-3"} {
		assert.True(t, strings.HasSuffix(got[i], "|"+want), "row %d: %s", i, got[i])
		assert.Equal(t, i == 2, b.msgs[i].end, "row %d", i)
		assert.Equal(t, "b", b.msgs[i].txnID)
	}
	assert.Less(t, b.msgs[0].sourceOffset, b.msgs[1].sourceOffset)
	assert.Less(t, b.msgs[1].sourceOffset, b.msgs[2].sourceOffset)
}

// An emitted transaction's buffered events go back with its rows once its
// messages are made, and the next transactions' events are those: the
// messages made from them before stay as they were (body and every
// metadata key), the reused events hold nothing while free, and what is
// kept free is bounded.
func TestEmittedEventsReused(t *testing.T) {
	f := newFeeder(t, testConfig(), orders0, items0)
	in := &Input{seqSource: "s"}
	type made struct {
		msg  *service.Message
		body string
		meta map[string]any
	}
	build := func(em *emission) []made {
		var out []made
		for _, om := range em.msgs {
			msg := in.messageLocked(om)
			b, err := msg.AsBytes()
			require.NoError(t, err)
			out = append(out, made{msg: msg, body: string(b), meta: metadataOf(t, msg)})
		}
		return out
	}
	f.data(orders0, dbzEvent(opCreate, "orders", 1, "a", 1, 1))
	f.data(items0, dbzEvent(opCreate, "items", 2, "a", 2, 1))
	f.meta(dbzEnd("a", "test.orders", 1, "test.items", 1))
	ems := f.drain()
	require.Len(t, ems, 1)
	a := ems[0]
	require.Len(t, a.events, 2)
	evA := slices.Clone(a.events)
	msgsA := build(a)
	f.a.recycleMsgs(a)
	assert.Nil(t, a.events)
	require.Len(t, f.a.freeEvents, 2)
	for i, e := range f.a.freeEvents {
		assert.Zero(t, *e, "free event %d still holds its row", i)
	}

	f.data(orders0, dbzEvent(opUpdate, "orders", 1, "b", 1, 1))
	f.data(items0, dbzEvent(opDelete, "items", 2, "b", 2, 1))
	f.data(items0, dbzEvent(opCreate, "items", 3, "b", 3, 2))
	f.meta(dbzEnd("b", "test.orders", 1, "test.items", 2))
	ems = f.drain()
	require.Len(t, ems, 1)
	b := ems[0]
	assert.Empty(t, f.a.freeEvents)
	reused := 0
	for _, e := range b.events {
		if slices.Contains(evA, e) {
			reused++
		}
	}
	assert.Equal(t, 2, reused, "b's events are a's")
	got := rows(b)
	require.Len(t, got, 3)
	for i, want := range []string{"b-1", "b-2", "b-3"} {
		assert.True(t, strings.HasSuffix(got[i], "|"+want), "row %d: %s", i, got[i])
	}
	msgsB := build(b)
	f.a.recycleMsgs(b)
	for i, m := range msgsA {
		body, err := m.msg.AsBytes()
		require.NoError(t, err)
		assert.Equal(t, m.body, string(body), "a's message %d", i)
		assert.Equal(t, m.meta, metadataOf(t, m.msg), "a's message %d", i)
		assert.NotEqual(t, msgsB[i].meta[consumer.MetaOffset], m.meta[consumer.MetaOffset])
	}

	many := &emission{}
	for range maxFreeEvents + 10 {
		many.events = append(many.events, &txnEvent{size: 1})
	}
	f.a.recycleMsgs(many)
	assert.Len(t, f.a.freeEvents, maxFreeEvents)
}
