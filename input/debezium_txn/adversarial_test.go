package debezium_txn

import (
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// These tests state promises of ARCHITECTURE.md §13 under inputs the unit
// tests do not cover. Each one fails on the current code.

// A routing SMT renames shop.test.orders to orders_routed and
// collection_topics is not set (README, Troubleshooting, says this shows as
// "still misses events"). When the END is read before the routed event, the
// transaction is emitted without its orders row, and the row, read later, is
// counted as a duplicate and dropped without any error: partly visible and
// lost.
func TestRoutedTopicWithoutMappingIsNeverLoadedPartly(t *testing.T) {
	cfg := testConfig()
	routed := tp{"orders_routed", 0}
	consumed := map[string]bool{"shop.test.items": true, routed.topic: true}
	cfg.consumed = func(t string) bool { return consumed[t] }
	f := newFeeder(t, cfg, items0, routed)
	f.a.markEmpty(routed) // nothing to read there at the start
	f.meta(dbzEnd("x", "test.orders", 1, "test.items", 1))
	f.data(items0, dbzEvent(opCreate, "items", 1, "x", 2, 1))
	ems := f.drain()
	for _, em := range ems {
		assert.NotEqual(t, 1, len(em.msgs), "transaction x emitted with 1 of its 2 rows: %v", rows(em))
		f.a.committed(testTxnTopic, em.msgs[len(em.msgs)-1].sourceOffset)
	}
	err := f.dataErr(routed, dbzEvent(opCreate, "orders", 1, "x", 1, 1))
	var reported bool
	for _, p := range f.a.problems(f.now) {
		reported = reported || p.key != ""
	}
	assert.True(t, err != nil || reported,
		"the orders row of x, read from a consumed topic, was dropped silently (duplicates=%d)", f.a.stats.duplicates)
}

// pauseHarness is an Input around an assembler, enough to run
// updatePausesLocked; the client never connects.
func pauseHarness(t *testing.T, a *assembler, parts ...tp) *Input {
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	in := &Input{asm: a, cl: cl, dataParts: map[tp]bool{}, paused: map[tp]bool{},
		m: newInputMetrics(service.MockResources().Metrics())}
	for _, p := range parts {
		in.dataParts[p] = true
	}
	return in
}

// The oldest transaction needs an event of a lagging partition (orders/1,
// e.g. its leader was down) while orders/0, a partition of the same needed
// topic, keeps being read and buffers later transactions. At twice
// max_buffered_bytes every data partition is paused, also orders/1: the
// oldest transaction can never complete, nothing is emitted again and
// nothing resumes the partitions (a "slow" cell of §13.12 turns into a
// permanent stall).
func TestHardBufferBoundNeverPausesWhatTheOldestTransactionNeeds(t *testing.T) {
	cfg := testConfig()
	cfg.maxBufferedBytes = 2000
	f := newFeeder(t, cfg, orders0, orders1)
	f.meta(dbzEnd("t1", "test.orders", 2))
	f.data(orders0, dbzEvent(opCreate, "orders", 1, "t1", 1, 1))
	for i := 2; f.a.buffered < 2*cfg.maxBufferedBytes; i++ {
		id := "t" + itoa(int64(i))
		f.data(orders0, dbzEvent(opUpdate, "orders", 1, id, 1, 1))
		f.meta(dbzEnd(id, "test.orders", 1))
	}
	in := pauseHarness(t, f.a, orders0, orders1)
	in.updatePausesLocked()
	assert.False(t, in.paused[orders1], "orders/1 holds the missing event of the oldest transaction t1 and is paused: a permanent stall")
}

// A complete transaction is held by the snapshot gate until items/0 is read
// up to the end offsets listed after its END. Meanwhile orders/0 streams
// later transactions into the buffer. At max_buffered_bytes neededTopics
// is empty (the head is complete), so items/0 is paused too and can never
// reach the listed end: the gate never opens.
func TestBufferBoundNeverPausesThePartitionTheSnapshotGateWaitsFor(t *testing.T) {
	cfg := testConfig()
	cfg.maxBufferedBytes = 2000
	f := newFeeder(t, cfg, orders0, items0)
	f.data(orders0, snapRow("orders", 1, "true"))
	f.data(items0, snapRow("items", 1, "true"))
	for _, em := range f.drain() {
		f.a.committed(em.msgs[0].partition, em.msgs[0].sourceOffset)
	}
	f.data(orders0, dbzEvent(opCreate, "orders", 5, "s1", 1, 1))
	f.meta(dbzEnd("s1", "test.orders", 1))
	require.Empty(t, f.drain())
	require.Contains(t, f.a.holdReason(f.a.ends[0]), "snapshot is not over")
	after, last, ok := f.a.wantEnds()
	require.True(t, ok)
	// items/0 has more snapshot rows in Kafka than were read (end 50).
	f.a.endsListed(after, last, map[tp]int64{orders0: f.next[orders0], items0: 50})
	for i := 2; f.a.buffered < cfg.maxBufferedBytes; i++ {
		id := "s" + itoa(int64(i))
		f.data(orders0, dbzEvent(opUpdate, "orders", 5, id, 1, 1))
		f.meta(dbzEnd(id, "test.orders", 1))
	}
	in := pauseHarness(t, f.a, orders0, items0)
	in.updatePausesLocked()
	assert.False(t, in.paused[items0], "items/0 must be read to offset 50 to release s1, and it is paused: a permanent stall (%s)", f.a.holdReason(f.a.ends[0]))
}

// exactly_once after a restart: the transaction topic is re-read from its
// group offset, which lags StarRocks' progress. Every END at or below the
// progress is skipped and its id remembered in a ring of resend_window.
// When more transactions are skipped than the window holds, the first ids
// are forgotten before their data events (re-read from the data floors) are
// read: those events become "orphans" without an END, hold their
// partition's floor for good and are reported as a connector
// misconfiguration.
func TestProgressSkippedTransactionsBeyondTheWindowDoNotPinTheFloor(t *testing.T) {
	cfg := testConfig()
	cfg.resendWindow = 2
	f := newFeeder(t, cfg, orders0)
	f.a.txnStart(0)
	f.a.setProgress(4)
	ids := []string{"a", "b", "c", "d", "e"}
	for _, id := range ids {
		f.meta(dbzEnd(id, "test.orders", 1))
	}
	for _, id := range ids {
		f.data(orders0, dbzEvent(opCreate, "orders", 1, id, 1, 1))
	}
	f.a.txnHighWatermark(f.txn)
	assert.Empty(t, f.drain())
	data, _ := f.a.floors()
	assert.Equal(t, int64(len(ids)), data[orders0], "the floor of orders/0 is pinned by events of transactions StarRocks already holds")
	for _, p := range f.a.problems(f.now.Add(2 * cfg.missingTimeout)) {
		t.Logf("reported: %s", p.msg)
	}
}

// Debezium sanitizes topic names (every character outside [a-zA-Z0-9._-]
// becomes "_") but names the collection unsanitized in END. With the
// default mapping, table test.order$items (topic shop.test.order_items,
// consumed) maps to shop.test.order$items, "not consumed": the transaction
// is emitted without that table's row, and the row is dropped later as a
// duplicate, with no configuration mistake by the user.
func TestSanitizedTopicNameIsNeverLoadedPartly(t *testing.T) {
	cfg := testConfig()
	sanitized := tp{"shop.test.order_items", 0}
	consumed := map[string]bool{"shop.test.orders": true, sanitized.topic: true}
	cfg.consumed = func(t string) bool { return consumed[t] }
	f := newFeeder(t, cfg, orders0, sanitized)
	f.a.markEmpty(sanitized)
	f.meta(dbzEnd("y", "test.orders", 1, "test.order$items", 1))
	f.data(orders0, dbzEvent(opCreate, "orders", 1, "y", 1, 1))
	for _, em := range f.drain() {
		assert.NotEqual(t, 1, len(em.msgs), "transaction y emitted without its order$items row: %v", rows(em))
		f.a.committed(testTxnTopic, em.msgs[len(em.msgs)-1].sourceOffset)
	}
	// With the sanitized mapping y waits for the row, which completes it:
	// loaded whole, nothing dropped.
	err := f.dataErr(sanitized, dbzEvent(opCreate, "order$items", 1, "y", 2, 1))
	require.NoError(t, err)
	ems := f.drain()
	require.Len(t, ems, 1, "y is emitted once its order$items row arrived")
	assert.Len(t, ems[0].msgs, 2, "y whole: %v", rows(ems[0]))
	assert.Equal(t, int64(0), f.a.stats.duplicates, "the order$items row was dropped")
}

// The start gate holds a complete transaction until items/0 delivers its
// first record (its leader is slow to come up after the assignment).
// orders/0 fills the buffer meanwhile; at max_buffered_bytes neededTopics
// is empty (the head is complete), so items/0 is paused and can never
// deliver that first record.
func TestBufferBoundNeverPausesThePartitionTheStartGateWaitsFor(t *testing.T) {
	cfg := testConfig()
	cfg.maxBufferedBytes = 2000
	f := newFeeder(t, cfg, orders0, items0)
	f.data(orders0, dbzEvent(opCreate, "orders", 1, "a", 1, 1))
	f.meta(dbzEnd("a", "test.orders", 1))
	for i := 2; f.a.buffered < cfg.maxBufferedBytes; i++ {
		id := "a" + itoa(int64(i))
		f.data(orders0, dbzEvent(opUpdate, "orders", 1, id, 1, 1))
		f.meta(dbzEnd(id, "test.orders", 1))
	}
	require.Contains(t, f.a.holdReason(f.a.ends[0]), "shop.test.items/0")
	in := pauseHarness(t, f.a, orders0, items0)
	in.updatePausesLocked()
	assert.False(t, in.paused[items0], "items/0 must deliver its first record to release a, and it is paused: a permanent stall")
}
