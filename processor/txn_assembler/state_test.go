package txnassembler

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
)

// src is a tiny helper that numbers the Kafka offsets of one partition.
type src struct {
	topic string
	part  int32
	next  int64
}

func (s *src) msg(body string) *service.Message {
	m := kafkaMsg(s.topic, s.part, s.next, body)
	s.next++
	return m
}

func (s *src) begin(txn string) *service.Message {
	return s.msg(envelope(int(s.part), txn, "TXN_BEGIN", "", "", ""))
}

func (s *src) data(txn, js string) *service.Message {
	return s.msg(envelope(int(s.part), txn, "DATA", "test", "orders", js))
}

func (s *src) end(txn string) *service.Message {
	return s.msg(envelope(int(s.part), txn, "TXN_END", "", "", ""))
}

func TestBeginIsDroppedAndResentBeginIgnored(t *testing.T) {
	p, _ := newProc(t, `{}`)
	s := &src{topic: "t", part: 0}
	assert.Nil(t, run(t, p, s.begin("a"), s.begin("a")), "a batch of BEGINs leaves nothing, so Benthos acks it")
	got := readAll(t, run(t, p, s.data("a", `{"id":1}`), s.begin("a"), s.data("a", `{"id":2}`), s.end("a")))
	require.Len(t, got, 3)
	for _, g := range got {
		assert.Equal(t, "a", g.TxnID)
		assert.NoError(t, g.Err)
		assert.False(t, g.TxnAbort, "a re-sent BEGIN aborts nothing")
	}
	assert.True(t, got[2].TxnEnd)
}

func TestBeginWhileOpenAbortsTheOpenTransaction(t *testing.T) {
	p, _ := newProc(t, `{}`)
	s := &src{topic: "t", part: 0}
	got := readAll(t, run(t, p,
		s.begin("a"), s.data("a", `{"id":1}`),
		s.begin("b"), // offset 2
		s.data("b", `{"id":2}`), s.end("b"),
	))
	require.Len(t, got, 4)
	assert.Equal(t, "a", got[0].TxnID)
	abort := got[1]
	assert.True(t, abort.TxnAbort)
	assert.True(t, abort.Marker)
	assert.False(t, abort.TxnEnd)
	assert.Empty(t, abort.Body)
	assert.Equal(t, "a", abort.TxnID, "the marker names the discarded transaction")
	assert.Equal(t, int64(2), abort.SourceOffset, "in place of the BEGIN")
	assert.Equal(t, "b", got[2].TxnID)
	assert.True(t, got[3].TxnEnd)
	for _, g := range got {
		assert.NoError(t, g.Err)
	}
}

func TestImplicitBeginAndEndWithNothingOpen(t *testing.T) {
	p, _ := newProc(t, `{}`)
	s := &src{topic: "t", part: 0}
	got := readAll(t, run(t, p,
		s.end("zzz"), // nothing open: dropped
		s.data("a", `{"id":1}`),
		s.end("a"),
		s.end("a"), // duplicate END: nothing open, dropped
	))
	require.Len(t, got, 2)
	assert.Equal(t, "a", got[0].TxnID)
	assert.True(t, got[1].TxnEnd)
	assert.Equal(t, int64(2), got[1].SourceOffset)
	assert.Equal(t, []int64{1, 2}, []int64{got[0].Seq, got[1].Seq})
}

func TestTransactionSpansBatches(t *testing.T) {
	p, _ := newProc(t, `{}`)
	s := &src{topic: "t", part: 0}
	b1 := readAll(t, run(t, p, s.begin("a"), s.data("a", `{"id":1}`)))
	b2 := readAll(t, run(t, p, s.data("a", `{"id":2}`)))
	b3 := readAll(t, run(t, p, s.data("a", `{"id":3}`), s.end("a")))
	all := append(append(b1, b2...), b3...)
	require.Len(t, all, 4)
	for i, g := range all {
		assert.Equal(t, "a", g.TxnID)
		assert.Equal(t, int64(i+1), g.Seq, "seqs continue across batches")
		assert.Equal(t, i == 3, g.TxnEnd)
	}
}

func TestPartitionsAreIndependent(t *testing.T) {
	p, _ := newProc(t, `{}`)
	a := &src{topic: "orders", part: 0}
	b := &src{topic: "orders", part: 1}
	c := &src{topic: "other", part: 0}
	got := readAll(t, run(t, p,
		a.begin("x"), b.begin("y"), c.data("z", `{"id":0}`),
		a.data("x", `{"id":1}`), b.data("y", `{"id":2}`),
		b.end("y"), c.end("z"), a.end("x"),
	))
	require.Len(t, got, 6)
	for _, g := range got {
		assert.NoError(t, g.Err, "one open transaction per partition, not per instance")
	}
	assert.Equal(t, "other/0", got[0].Partition)
	assert.Equal(t, "orders/0", got[1].Partition)
	assert.Equal(t, "orders/1", got[2].Partition)
	assert.Equal(t, int64(0), got[0].SourceOffset, "offsets are per partition")
}

func TestInterleavedWritersAreFlaggedNeverMerged(t *testing.T) {
	p, _ := newProc(t, `{}`)
	s := &src{topic: "t", part: 4}
	got := readAll(t, run(t, p,
		s.data("A", `{"id":1}`),
		s.data("B", `{"id":2}`), // violation
		s.data("A", `{"id":3}`),
		s.end("A"),
		s.data("B", `{"id":4}`), // B is incomplete: flagged
		s.end("B"),
		s.data("C", `{"id":5}`),
		s.end("C"),
	))
	require.Len(t, got, 8)
	assert.NoError(t, got[0].Err)

	v := got[1]
	require.Error(t, v.Err)
	assert.Equal(t, "A", v.TxnID, "stamped with the open transaction so the output dead-letters it")
	assert.Contains(t, v.Err.Error(), `partition "t/4"`)
	assert.Contains(t, v.Err.Error(), `transaction "A"`)
	assert.Contains(t, v.Err.Error(), `field "txnId": row of transaction "B" arrived while transaction "A" is open`)

	assert.NoError(t, got[2].Err)
	assert.True(t, got[3].TxnEnd)

	require.Error(t, got[4].Err, "the rest of B must not be committed on its own")
	assert.Equal(t, "B", got[4].TxnID)
	assert.Contains(t, got[4].Err.Error(), "incomplete")
	require.Error(t, got[5].Err)
	assert.True(t, got[5].TxnEnd)

	assert.NoError(t, got[6].Err, "once B ended, the partition is clean again")
	assert.NoError(t, got[7].Err)
}

func TestForeignEndIsDropped(t *testing.T) {
	p, _ := newProc(t, `{}`)
	s := &src{topic: "t", part: 0}
	got := readAll(t, run(t, p, s.begin("A"), s.data("A", `{"id":1}`), s.end("B"), s.data("A", `{"id":2}`), s.end("A")))
	require.Len(t, got, 3)
	for _, g := range got {
		assert.NoError(t, g.Err)
		assert.Equal(t, "A", g.TxnID)
	}
	assert.True(t, got[2].TxnEnd)
}

func TestBadInputIsFlaggedAndAttributed(t *testing.T) {
	p, _ := newProc(t, `{}`)
	s := &src{topic: "t", part: 0}
	got := readAll(t, run(t, p,
		s.begin("A"),
		s.msg(`{not json`), // inside A
		s.msg(envelope(0, "A", "DATA", "test", "", `{}`)),  // no table
		s.msg(envelope(0, "A", "WHATEVER", "", "", "")),    // unknown type
		s.msg(envelope(0, "A", "DATA", "", "orders", `1`)), // row not an object
		s.end("A"),
	))
	require.Len(t, got, 5)
	for _, g := range got[:4] {
		require.Error(t, g.Err)
		assert.Equal(t, "A", g.TxnID)
		assert.Equal(t, "t/0", g.Partition)
		assert.True(t, g.HasSeq && g.HasOffset, "flagged messages keep the contract")
	}
	assert.Contains(t, got[0].Err.Error(), `field "body" is not valid JSON`)
	assert.Equal(t, `{not json`, got[0].Body)
	assert.Contains(t, got[1].Err.Error(), `field "table" is missing`)
	assert.Contains(t, got[2].Err.Error(), `unknown event type "WHATEVER"`)
	assert.Contains(t, got[3].Err.Error(), `field "json" must hold a JSON object`)
	assert.NoError(t, got[4].Err)
	assert.True(t, got[4].TxnEnd)
}

func TestUnattributableMessageTaintsTheNextImplicitTransaction(t *testing.T) {
	p, _ := newProc(t, `{}`)
	s := &src{topic: "t", part: 0}
	got := readAll(t, run(t, p,
		s.msg(`garbage`),
		s.data("A", `{"id":1}`),
		s.end("A"),
		s.msg(`garbage`),
		s.begin("B"), // an explicit BEGIN starts clean
		s.data("B", `{"id":2}`),
		s.end("B"),
	))
	require.Len(t, got, 6)
	require.Error(t, got[0].Err)
	assert.Equal(t, "invalid@0", got[0].TxnID)
	assert.True(t, got[0].TxnEnd, "its own one-message transaction")
	require.Error(t, got[1].Err)
	assert.Contains(t, got[1].Err.Error(), "may have been its first row")
	require.Error(t, got[2].Err)
	assert.True(t, got[2].TxnEnd)
	require.Error(t, got[3].Err)
	assert.NoError(t, got[4].Err)
	assert.NoError(t, got[5].Err)
}

func TestMissingDatabase(t *testing.T) {
	p, _ := newProc(t, `{}`)
	s := &src{topic: "t", part: 0}
	g := read(t, run(t, p, s.msg(envelope(0, "A", "DATA", "", "orders", `{"id":1}`)))[0])
	require.Error(t, g.Err)
	assert.Contains(t, g.Err.Error(), `field "database" is missing`)
	assert.Equal(t, "A", g.TxnID)
}

func TestNoPartition(t *testing.T) {
	p, _ := newProc(t, `format: maxwell`)
	g := read(t, run(t, p, service.NewMessage([]byte(maxwellRow1)))[0])
	require.Error(t, g.Err)
	assert.Contains(t, g.Err.Error(), `set the "partition" field`)
	assert.Equal(t, "23396", g.TxnID)
	assert.Equal(t, int64(1), g.Seq)
}

func TestReplayedOffsetsAreFlaggedAndChangeNoState(t *testing.T) {
	p, _ := newProc(t, `{}`)
	s := &src{topic: "t", part: 0}
	batch := []*service.Message{s.begin("A"), s.data("A", `{"id":1}`), s.data("A", `{"id":2}`)}
	first := readAll(t, run(t, p, batch...))
	require.Len(t, first, 2)

	// Benthos replays a nacked batch through every processor.
	replayed := readAll(t, run(t, p, batch...))
	require.Len(t, replayed, 2, "the replayed BEGIN is dropped")
	for i, g := range replayed {
		require.Error(t, g.Err)
		assert.Contains(t, g.Err.Error(), `field "kafka_offset": source offset`)
		assert.Contains(t, g.Err.Error(), "at or below offset 2")
		assert.Contains(t, g.Err.Error(), "replay")
		assert.Equal(t, "A", g.TxnID)
		assert.Equal(t, first[i].SourceOffset, g.SourceOffset)
		assert.Equal(t, first[i].Body, g.Body)
		assert.Equal(t, int64(3+i), g.Seq, "replayed messages still take dense seqs")
	}

	// The open transaction survived: it continues and ends normally.
	rest := readAll(t, run(t, p, s.data("A", `{"id":3}`), s.end("A")))
	require.Len(t, rest, 2)
	assert.NoError(t, rest[0].Err)
	assert.Equal(t, "A", rest[0].TxnID)
	assert.True(t, rest[1].TxnEnd)

	// A reordered END is a marker flagged, never an end.
	late := kafkaMsg("t", 0, 1, envelope(0, "A", "TXN_END", "", "", ""))
	g := read(t, run(t, p, late)[0])
	require.Error(t, g.Err)
	assert.False(t, g.TxnEnd)
	assert.True(t, g.Marker)
}

func TestFenceResetsThePartition(t *testing.T) {
	p, res := newProc(t, `{}`)
	s := &src{topic: "t", part: 0}
	other := &src{topic: "t", part: 1}
	run(t, p, s.begin("A"), s.data("A", `{"id":1}`), other.data("Z", `{"id":9}`))

	require.NoError(t, registry.Get(res).Fence(context.Background(), "t/0"))

	// The new owner re-reads from an earlier offset, and A is forgotten.
	s.next = 0
	got := readAll(t, run(t, p, s.data("B", `{"id":1}`), s.end("B"), other.data("Y", `{"id":8}`)))
	require.Len(t, got, 3)
	assert.NoError(t, got[0].Err, "offset 0 is accepted after the reset, and B is no violation")
	assert.Equal(t, "B", got[0].TxnID)
	assert.True(t, got[1].TxnEnd)
	require.Error(t, got[2].Err, "the unfenced partition kept its open transaction")
	assert.Equal(t, "Z", got[2].TxnID)
}

func TestConcurrentCallsFailTheWholeBatch(t *testing.T) {
	p, _ := newProc(t, `{}`)
	s := &src{topic: "t", part: 0}

	// Hold the state lock so that the first call stays in flight.
	p.mu.Lock()
	var wg sync.WaitGroup
	wg.Add(1)
	var first []service.MessageBatch
	go func() {
		defer wg.Done()
		var err error
		first, err = p.ProcessBatch(context.Background(), service.MessageBatch{s.data("A", `{"id":1}`)})
		assert.NoError(t, err)
	}()
	require.Eventually(t, p.inFlight.Load, time.Second, time.Millisecond)

	done := make(chan []service.MessageBatch)
	go func() {
		out, err := p.ProcessBatch(context.Background(), service.MessageBatch{s.data("A", `{"id":2}`), s.end("A")})
		assert.NoError(t, err)
		done <- out
	}()
	var second []service.MessageBatch
	select {
	case second = <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("an overlapping call must not block")
	}
	p.mu.Unlock()
	wg.Wait()

	require.Len(t, second, 1)
	require.Len(t, second[0], 2)
	for _, m := range second[0] {
		require.ErrorIs(t, m.GetError(), ErrConcurrentCalls)
		assert.Contains(t, m.GetError().Error(), "input.processors")
		assert.Contains(t, m.GetError().Error(), "pipeline.threads: 1")
	}
	require.Len(t, first, 1)
	g := read(t, first[0][0])
	assert.NoError(t, g.Err)
	assert.Equal(t, int64(1), g.Seq, "the failed call took no seq")

	// The instance works again once calls no longer overlap.
	out := readAll(t, run(t, p, s.end("A")))
	require.Len(t, out, 1)
	assert.Equal(t, int64(2), out[0].Seq)
}

func TestEndWithoutIDClosesTheOpenTransactionFlagged(t *testing.T) {
	p, _ := newProc(t, `{}`)
	s := &src{topic: "t", part: 0}
	got := readAll(t, run(t, p,
		s.data("A", `{"id":1}`),
		s.msg(`{"partition":0,"type":"TXN_END"}`),
		s.data("B", `{"id":2}`),
	))
	require.Len(t, got, 3)
	require.Error(t, got[1].Err)
	assert.Contains(t, got[1].Err.Error(), `field "txnId" is missing`)
	assert.Equal(t, "A", got[1].TxnID)
	assert.True(t, got[1].TxnEnd && got[1].Marker)
	assert.Empty(t, got[1].Body)
	assert.NoError(t, got[2].Err, "A is closed, so B is no violation")
}

func TestBadMessageWithKnownIDPoisonsItsTransaction(t *testing.T) {
	p, _ := newProc(t, `{}`)
	s := &src{topic: "t", part: 0}
	got := readAll(t, run(t, p,
		s.msg(envelope(0, "A", "TXN_MAYBE", "", "", "")),
		s.data("A", `{"id":1}`),
		s.end("A"),
		s.data("A2", `{"id":2}`),
	))
	require.Len(t, got, 4)
	require.Error(t, got[0].Err)
	assert.Equal(t, "A", got[0].TxnID)
	assert.True(t, got[0].TxnEnd, "nothing open: its own one-message transaction")
	require.Error(t, got[1].Err, "the rest of A is incomplete")
	assert.Contains(t, got[1].Err.Error(), "earlier message of this transaction at offset 0 was bad")
	require.Error(t, got[2].Err)
	assert.True(t, got[2].TxnEnd)
	assert.NoError(t, got[3].Err)
}

// TestFenceDuringProcessing fences partitions from another goroutine while
// batches are processed, as a Kafka input does on a rebalance (run with
// -race). Seqs stay dense whatever the fence forgets.
func TestFenceDuringProcessing(t *testing.T) {
	p, res := newProc(t, `{}`)
	reg := registry.Get(res)
	// Each transaction processed sets off a fence (unless one is still
	// pending), which runs beside the next transaction's batch.
	fence := make(chan struct{}, 1)
	var fences atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range fence {
			_ = reg.Fence(context.Background(), "t/0")
			fences.Add(1)
		}
	}()
	s := &src{topic: "t", part: 0}
	seq := int64(0)
	for i := 0; i < 300; i++ {
		txn := "x" + strconv.Itoa(i)
		for _, m := range run(t, p, s.begin(txn), s.data(txn, `{"id":1}`), s.end(txn)) {
			g := read(t, m)
			seq++
			require.Equal(t, seq, g.Seq)
		}
		select {
		case fence <- struct{}{}:
		default:
		}
	}
	close(fence)
	wg.Wait()
	assert.Positive(t, fences.Load(), "fences ran")
	assert.GreaterOrEqual(t, seq, int64(300), "at least the rows came out")
}
