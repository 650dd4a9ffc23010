package debezium_txn

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Debezium's default naming replaces every character outside
// [a-zA-Z0-9._-] by "_" (one per UTF-16 unit), cuts at 249 characters and
// never names a topic "." or "..".
func TestSanitizeTopicName(t *testing.T) {
	for in, want := range map[string]string{
		"shop.test.orders":       "shop.test.orders",
		"shop.test.order$items":  "shop.test.order_items",
		"shop.dbo.Ünïcode tab":   "shop.dbo._n_code_tab",
		"shop.x.😀":               "shop.x.__",
		"a-b_c.D9":               "a-b_c.D9",
		".":                      "_",
		"..":                     "__",
		"...":                    "...",
		strings.Repeat("a", 300): strings.Repeat("a", 249),
	} {
		assert.Equal(t, want, sanitizeTopicName(in), in)
	}
	n := newTopicNaming("shop", map[string]string{"test.orders_2025": "orders"})
	assert.Equal(t, "shop.test.order_items", n.topicOf("test.order$items"))
	assert.Equal(t, "orders", n.topicOf("test.orders_2025"))
	for topic, want := range map[string]bool{
		"shop.test.orders":          true,
		"shop.test.order_items":     true,
		"orders":                    true, // a collection_topics value
		"orders_routed":             false,
		"shop.":                     false,
		"shop":                      false, // the schema-change topic
		"__debezium-heartbeat.shop": false,
	} {
		assert.Equal(t, want, n.mapped(topic), topic)
	}
}

// A routing SMT that renames a topic inside the prefix's names (here
// test.orders into shop.test.orders_all) without collection_topics: the
// first routed event stops emission with both topics and the setting to
// use, so no transaction is loaded without the collection's events, and
// the partition's floor stays at the event.
func TestEventOnAnotherTopicThanItsCollectionsStopsEmission(t *testing.T) {
	cfg := testConfig()
	all := tp{"shop.test.orders_all", 0}
	consumed := map[string]bool{all.topic: true, items0.topic: true}
	cfg.consumed = func(t string) bool { return consumed[t] }
	f := newFeeder(t, cfg, all, items0)
	err := f.dataErr(all, dbzEvent(opCreate, "orders", 1, "x", 1, 1))
	require.Error(t, err)
	for _, s := range []string{"test.orders", "shop.test.orders_all", "shop.test.orders", "collection_topics"} {
		assert.Contains(t, err.Error(), s)
	}
	f.data(items0, dbzEvent(opCreate, "items", 1, "x", 2, 1))
	f.meta(dbzEnd("x", "test.orders", 1, "test.items", 1))
	f.data(items0, dbzEvent(opCreate, "items", 2, "z", 1, 1))
	f.meta(dbzEnd("z", "test.items", 1))
	assert.Empty(t, f.drain(), "nothing is emitted once the mapping is known wrong")
	data, _ := f.a.floors()
	assert.Equal(t, int64(0), data[all], "the routed event is never committed past")
	var stopped bool
	for _, p := range f.a.problems(f.now) {
		stopped = stopped || (p.key == "stopped" && strings.Contains(p.msg, "collection_topics"))
	}
	assert.True(t, stopped, "the stop is reported")
}

// An event of a transaction already emitted is dropped only when it is a
// proven re-send; one the transaction was loaded without stops emission,
// while emitted and after the commit.
func TestEventOfALoadedTransactionIsDroppedOnlyWhenResent(t *testing.T) {
	for _, committed := range []bool{false, true} {
		f := newFeeder(t, testConfig(), orders0)
		f.data(orders0, dbzEvent(opCreate, "orders", 1, "a", 1, 1))
		f.data(orders0, dbzEvent(opCreate, "orders", 2, "a", 2, 2))
		f.meta(dbzEnd("a", "test.orders", 2))
		ems := f.drain()
		require.Len(t, ems, 1)
		if committed {
			f.a.committed(testTxnTopic, ems[0].msgs[1].sourceOffset)
		}
		f.data(orders0, dbzEvent(opCreate, "orders", 1, "a", 1, 1))
		f.data(orders0, dbzEvent(opCreate, "orders", 2, "a", 2, 2))
		assert.Equal(t, int64(2), f.a.stats.duplicates, "re-sends are dropped")
		err := f.dataErr(orders0, dbzEvent(opCreate, "orders", 3, "a", 3, 3))
		require.Error(t, err, "committed=%v", committed)
		assert.Contains(t, err.Error(), `transaction "a"`)
		assert.Contains(t, err.Error(), "data_collection_order 3")
		f.data(items0, dbzEvent(opCreate, "items", 4, "b", 1, 1))
		f.meta(dbzEnd("b", "test.items", 1))
		assert.Empty(t, f.drain(), "committed=%v: nothing is emitted after it", committed)
	}
}

// At the bound, a partition that delivered an event of a later transaction
// is paused (the oldest has nothing more there), a topic the oldest does
// not need is paused, and a partition delivering the oldest transaction's
// own events keeps being read however large it is.
func TestBufferBoundPausesOnlyWhatTheOldestTransactionCannotNeed(t *testing.T) {
	cfg := testConfig()
	cfg.maxBufferedBytes = 1000
	f := newFeeder(t, cfg, orders0, orders1, items0)
	f.a.markEmpty(items0)
	n := 0
	for ; f.a.buffered < 3*cfg.maxBufferedBytes; n++ {
		f.data(orders1, dbzEvent(opCreate, "orders", n, "big", n+1, n+1))
	}
	f.meta(dbzEnd("big", "test.orders", n+1))
	in := pauseHarness(t, f.a, orders0, orders1, items0)
	in.updatePausesLocked()
	assert.False(t, in.paused[orders1], "orders/1 delivers big itself, three times the bound")
	assert.False(t, in.paused[orders0], "orders/0 may hold big's last event")
	assert.True(t, in.paused[items0], "big has nothing in items")
	f.data(orders0, dbzEvent(opCreate, "orders", 1, "later", 1, 1))
	in.updatePausesLocked()
	assert.True(t, in.paused[orders0], "orders/0 is past big")
	assert.False(t, in.paused[orders1])
	f.data(orders1, dbzEvent(opCreate, "orders", n, "big", n+1, n+1))
	f.meta(dbzEnd("later", "test.orders", 1))
	ems := f.drain()
	require.Len(t, ems, 2)
	assert.Len(t, ems[0].msgs, n+1, "big is emitted whole")
	in.updatePausesLocked()
	assert.Empty(t, in.paused, "below the bound again")
}

// A transaction that can never complete (an event deleted by retention)
// holds every later one until the operator lists it in skip_transactions:
// then it is skipped whole — none of its events loaded — with an error
// naming it, the later ones go on, its late event is dropped and the
// floors move past it.
func TestSkipTransactionsGivesUpAnIncompleteOne(t *testing.T) {
	for _, skip := range []bool{false, true} {
		cfg := testConfig()
		if skip {
			cfg.skip = map[string]bool{"lost": true}
		}
		f := newFeeder(t, cfg, orders0)
		f.data(orders0, dbzEvent(opCreate, "orders", 1, "lost", 1, 1))
		f.meta(dbzEnd("lost", "test.orders", 2))
		f.data(orders0, dbzEvent(opCreate, "orders", 2, "next", 1, 1))
		f.meta(dbzEnd("next", "test.orders", 1))
		ems := f.drain()
		if !skip {
			assert.Empty(t, ems, "lost holds next")
			continue
		}
		require.Len(t, ems, 1)
		assert.Equal(t, "next", ems[0].txn.id)
		assert.Len(t, ems[0].msgs, 1)
		assert.Equal(t, int64(1), f.a.stats.operatorSkipped)
		require.Len(t, f.a.notes, 1)
		assert.Contains(t, f.a.notes[0], `transaction "lost"`)
		assert.Contains(t, f.a.notes[0], "seen 1 of 2")
		f.a.committed(testTxnTopic, ems[0].msgs[0].sourceOffset)
		require.NoError(t, f.dataErr(orders0, dbzEvent(opCreate, "orders", 3, "lost", 2, 2)), "a late event of it is dropped")
		data, txn := f.a.floors()
		assert.Equal(t, f.next[orders0], data[orders0])
		assert.Equal(t, f.txn, txn)
	}
}
