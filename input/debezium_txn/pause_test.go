package debezium_txn

import (
	"context"
	"errors"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests pin how the buffer bound reads a backlog (ARCHITECTURE.md
// §13.8). The bench's 160 000 transactions (1.2 GB of Debezium events with
// schemas) ran at a fifth of the speed of 40 000 at 0.4 cores: at the bound
// the oldest transaction, once complete, needs no partition, so every data
// partition was paused and the fetch in flight held only the transaction
// topic, read to its end. franz-go sends a resumed partition only with the
// next fetch, so what the next transaction needed waited fetch_max_wait
// (500 ms) twice per transaction switch: once for the fetch in flight, once
// because nothing but the poll loop (or an acknowledgement) resumed it.

// boundHarness is pauseHarness with what nextBatchLocked needs, the
// transaction topic named.
func boundHarness(t *testing.T, a *assembler, parts ...tp) *Input {
	in := pauseHarness(t, a, parts...)
	in.conf.transactionTopic = testTxnTopic
	in.conf.checkpointLimit = 1 << 20
	in.log = service.MockResources().Logger()
	return in
}

// clientPaused is what the franz-go client has paused: what a fetch leaves
// out.
func clientPaused(in *Input) map[tp]bool {
	out := map[tp]bool{}
	for topic, parts := range in.cl.PauseFetchPartitions(nil) {
		for _, p := range parts {
			out[tp{topic, p}] = true
		}
	}
	return out
}

// Emitting the complete oldest transaction at the bound resumes, at once,
// the partition the next one misses an event of: before, it stayed paused
// until a fetch returned or an acknowledgement came, and at the bound the
// fetch in flight may be one of nothing to read (or none at all).
func TestEmittingAtTheBoundResumesWhatTheNextTransactionNeeds(t *testing.T) {
	cfg := testConfig()
	cfg.maxBufferedBytes = 2000
	f := newFeeder(t, cfg, orders0, items0)
	f.a.markEmpty(items0) // nothing there at the start
	f.data(orders0, dbzEvent(opCreate, "orders", 1, "t1", 1, 1))
	f.meta(dbzEnd("t1", "test.orders", 1))
	f.data(orders0, dbzEvent(opCreate, "orders", 2, "t2", 1, 1))
	f.meta(dbzEnd("t2", "test.orders", 1, "test.items", 1))
	// orders/0 was read far ahead: later transactions fill the buffer
	// past the bound even without t1.
	for i := 3; f.a.buffered < 2*cfg.maxBufferedBytes; i++ {
		f.data(orders0, dbzEvent(opCreate, "orders", i, "t"+itoa(int64(i)), 1, 1))
	}
	in := boundHarness(t, f.a, orders0, items0)
	in.updatePausesLocked()
	require.True(t, clientPaused(in)[items0], "t1 is complete and needs nothing: everything is paused")
	require.True(t, clientPaused(in)[orders0])

	batch, _, _ := in.nextBatchLocked(context.Background())
	require.Len(t, batch, 1, "t1 is emitted")
	require.GreaterOrEqual(t, f.a.buffered, cfg.maxBufferedBytes, "still at the bound")
	paused := clientPaused(in)
	assert.False(t, paused[items0], "t2, now the oldest, misses its items event: items/0 must be read from the emission on")
	assert.True(t, paused[orders0], "orders/0 is past t2")
}

// At the bound, the transaction topic is read only while no END of the
// buffered events is known: once the oldest transaction's END is read, more
// END events cannot complete it, and a fetch that holds the transaction
// topic alone, read to its end, waits fetch_max_wait and delays every
// partition resumed meanwhile. Below the bound it is read again.
func TestTransactionTopicIsPausedAtTheBoundOnceTheOldestEndIsRead(t *testing.T) {
	cfg := testConfig()
	cfg.maxBufferedBytes = 2000
	f := newFeeder(t, cfg, orders0, items0)
	f.a.markEmpty(items0)
	txn := tp{testTxnTopic, 0}
	n := 0
	for ; f.a.buffered < cfg.maxBufferedBytes; n++ {
		f.data(orders0, dbzEvent(opCreate, "orders", n, "u"+itoa(int64(n)), 1, 1))
	}
	in := boundHarness(t, f.a, orders0, items0)
	in.updatePausesLocked()
	paused := clientPaused(in)
	assert.False(t, paused[txn], "no END is known: the transaction topic is what tells which partitions the events need")
	assert.True(t, paused[orders0])

	f.meta(dbzEnd("u0", "test.orders", 1, "test.items", 1))
	in.updatePausesLocked()
	paused = clientPaused(in)
	assert.True(t, paused[txn], "u0's END is read: only its items event can complete it")
	assert.False(t, paused[items0], "u0 misses its items event")
	assert.True(t, paused[orders0], "orders/0 is past u0")

	f.data(items0, dbzEvent(opCreate, "items", 0, "u0", 2, 1))
	for i := 1; i < n; i++ {
		f.meta(dbzEnd("u"+itoa(int64(i)), "test.orders", 1))
	}
	batch, _, _ := in.nextBatchLocked(context.Background())
	require.NotEmpty(t, batch)
	require.Less(t, f.a.buffered, cfg.maxBufferedBytes)
	assert.Empty(t, clientPaused(in), "below the bound everything is read")
}

// END events count toward the bound: the transaction topic read far ahead
// of the data topics (its records are small, so a fetch holds many more
// transactions) fills the buffer, and then it is paused while the oldest
// transaction's partitions are read. Before, a backlog's transaction topic
// was held whole in memory (160 000 transactions in the bench).
func TestEndEventsCountTowardTheBound(t *testing.T) {
	cfg := testConfig()
	cfg.maxBufferedBytes = 2000
	f := newFeeder(t, cfg, orders0, items0)
	f.a.markEmpty(items0)
	var size int64
	n := 0
	for ; size < cfg.maxBufferedBytes; n++ {
		end := dbzEnd("v"+itoa(int64(n)), "test.orders", 1)
		size += int64(len(end))
		f.meta(end)
	}
	require.Equal(t, size, f.a.buffered, "every END held is counted")
	in := boundHarness(t, f.a, orders0, items0)
	in.updatePausesLocked()
	paused := clientPaused(in)
	assert.True(t, paused[tp{testTxnTopic, 0}], "the transaction topic is paused at the bound")
	assert.False(t, paused[orders0], "the oldest transaction's orders event is still to read")
	for i := 0; i < n; i++ {
		f.data(orders0, dbzEvent(opCreate, "orders", i, "v"+itoa(int64(i)), 1, 1))
	}
	require.Len(t, f.drain(), n)
	assert.Zero(t, f.a.buffered, "emitted transactions hold nothing of the bound")
}

// Once at the bound, what is paused stays paused until the buffer fell to
// half of it. Resuming everything as soon as one transaction is
// emitted, just under the bound, brings one fetch of every partition, over
// the bound again, and the fetch then in flight (issued before the pause)
// is thrown away: a pause and resume of every partition per transaction.
func TestBoundHoldsUntilTheBufferFellToHalfOfIt(t *testing.T) {
	cfg := testConfig()
	cfg.maxBufferedBytes = 8000
	f := newFeeder(t, cfg, orders0, items0)
	f.a.markEmpty(items0)
	for i := 0; f.a.buffered < cfg.maxBufferedBytes; i++ {
		id := "w" + itoa(int64(i))
		f.data(orders0, dbzEvent(opCreate, "orders", i, id, 1, 1))
		f.meta(dbzEnd(id, "test.orders", 1))
	}
	in := boundHarness(t, f.a, orders0, items0)
	in.updatePausesLocked()
	require.True(t, clientPaused(in)[orders0], "at the bound, the complete oldest transaction needs nothing")
	low := cfg.maxBufferedBytes / 2
	emitted := 0
	for f.a.buffered >= low {
		em := f.a.next(1)
		require.NotNil(t, em)
		emitted++
		in.updatePausesLocked()
		if f.a.buffered >= low {
			require.True(t, clientPaused(in)[orders0], "%d bytes buffered after %d transactions emitted, not half the bound yet: still paused", f.a.buffered, emitted)
			require.True(t, clientPaused(in)[tp{testTxnTopic, 0}])
		}
	}
	assert.Greater(t, emitted, 1, "more than one transaction emitted per pause and resume")
	assert.Empty(t, clientPaused(in), "at half the bound everything is read again")
}

// A rejected batch stops the stream naming its first transaction, and
// counts its rows out of flight, though the emissions' rows went back to
// the assembler once their messages were made.
func TestRejectedBatchNamesItsFirstTransaction(t *testing.T) {
	f := newFeeder(t, testConfig(), orders0)
	f.data(orders0, dbzEvent(opCreate, "orders", 1, "t1", 1, 1))
	f.data(orders0, dbzEvent(opCreate, "orders", 2, "t1", 2, 2))
	f.meta(dbzEnd("t1", "test.orders", 2))
	f.data(orders0, dbzEvent(opCreate, "orders", 3, "t2", 1, 1))
	f.meta(dbzEnd("t2", "test.orders", 1))
	in := boundHarness(t, f.a, orders0)
	batch, ack, _ := in.nextBatchLocked(context.Background())
	require.Len(t, batch, 3)
	require.NotNil(t, ack)
	assert.Equal(t, 3, in.unacked)
	require.NoError(t, ack(context.Background(), errors.New("refused")))
	assert.Equal(t, 0, in.unacked)
	require.Error(t, in.stopped)
	assert.Contains(t, in.stopped.Error(), `transaction "t1"`)
}
