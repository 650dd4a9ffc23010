package debezium_txn

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A blocking snapshot of orders starts after two streamed transactions: h
// (items only) committed before y (orders only). orders/0 holds y's event
// and then the snapshot row; items/0 holds h's event, read after it (a
// lagging partition, or just fed later in the same poll). h is the oldest
// and complete; the snapshot gate, once the listing closes orders/0, holds
// it until every snapshot row read is committed (§13.5 rule 2). But the
// snapshot row comes after y's event in orders/0, so by rule 1 it waits for
// y, and y waits for h: nothing is emitted again (no bound involved).
func TestSnapshotRowAfterALaterTransactionDoesNotHoldTheOldest(t *testing.T) {
	f := newFeeder(t, testConfig(), orders0, items0)
	f.data(orders0, dbzEvent(opCreate, "orders", 1, "y", 1, 1))
	f.data(orders0, snapRow("orders", 2, "true"))
	f.meta(dbzEnd("h", "test.items", 1))
	f.meta(dbzEnd("y", "test.orders", 1))
	f.data(items0, dbzEvent(opCreate, "items", 1, "h", 1, 1))
	// The listing asked for (if any) shows orders/0 read to its end.
	if after, last, ok := f.a.wantEnds(); ok {
		f.a.endsListed(after, last, map[tp]int64{orders0: f.next[orders0], items0: f.next[items0]})
	}

	var got []string
	for round := 0; round < 10; round++ {
		ems := f.drain()
		if len(ems) == 0 {
			break
		}
		got = append(got, txnIDs(ems)...)
		for _, em := range ems {
			m := em.msgs[len(em.msgs)-1]
			f.a.committed(m.partition, m.sourceOffset)
		}
	}
	reason := ""
	if len(f.a.ends) > 0 {
		reason = f.a.holdReason(f.a.ends[0])
	}
	assert.Contains(t, got, "h", "h is never emitted: %s; the snapshot row waits for y, y for h", reason)
	assert.Contains(t, got, "y")
}
