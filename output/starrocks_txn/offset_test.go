package starrocks_txn

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
)

// exactly_once and starrocks_source_offset (partition.go: requireOffset).

// mappedRow is a data row as a hand-written mapping stamps it: the
// contract's keys as strings, and no starrocks_source_offset (the mapping
// forgot it).
func mappedRow(source string, seq int64, p, txn, table string, body map[string]any, end bool) *service.Message {
	b, _ := json.Marshal(body)
	m := service.NewMessage(b)
	m.MetaSetMut(contract.KeyPartition, p)
	m.MetaSetMut(contract.KeyTxnID, txn)
	m.MetaSetMut(contract.KeyDatabase, "test")
	m.MetaSetMut(contract.KeyTable, table)
	m.MetaSetMut(contract.KeySeq, strconv.FormatInt(seq, 10))
	m.MetaSetMut(contract.KeySeqSource, source)
	if end {
		m.MetaSetMut(contract.KeyTxnEnd, "true")
	}
	return m
}

// withoutOffset removes starrocks_source_offset from a stamped message.
func withoutOffset(m *service.Message) *service.Message {
	meta, err := contract.Read(m)
	if err != nil {
		panic(err)
	}
	meta.HasOffset, meta.SourceOffset = false, 0
	contract.Write(m, meta)
	return m
}

// Under exactly_once a source transaction whose messages carry no
// starrocks_source_offset is refused whole, with an error naming the key
// and what to do: loaded, it would be loaded again by the replay after a
// restart (nothing tells that replay from new data). The repro: two rows of
// one transaction, committed, the output closed and restarted, the same
// transaction sent again — its rows were in StarRocks twice.
func TestExactlyOnceRefusesATransactionWithoutSourceOffsets(t *testing.T) {
	f := newFakeSR()
	send := func(source string) *fakeDL {
		dl := &fakeDL{}
		o, _, _ := eoOutput(t, f, dl, "")
		batch := service.MessageBatch{
			mappedRow(source, 1, "p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, false),
			mappedRow(source, 2, "p0", "t1", "b", map[string]any{"id": 2, "txn": "t1"}, true),
		}
		waitAll(t, []chan error{writeAsync(o, batch)}, 5*time.Second)
		quiesce(t, o)
		require.NoError(t, o.Close(context.Background()))
		return dl
	}
	for run, source := range []string{"map-1", "map-2"} {
		dl := send(source)
		assert.Equal(t, []string{"t1"}, dl.txnIDs(), "run %d: the transaction goes to dead_letter", run+1)
		dl.mu.Lock()
		if assert.Len(t, dl.batches, 1) {
			assert.Len(t, dl.batches[0], 2, "whole")
			reason, _ := dl.batches[0][0].MetaGet(deadLetterReasonKey)
			assert.Contains(t, reason, "semantic exactly_once needs starrocks_source_offset on every message")
			assert.Contains(t, reason, "a custom mapping must set it")
		}
		dl.mu.Unlock()
	}
	assert.Empty(t, countIDs(f.rows("a")), "nothing of it is loaded, in either run")
	assert.Empty(t, countIDs(f.rows("b")))
}

// A transaction only one of whose messages lacks the offset is refused
// whole too: without dead_letter its partition stalls at it, nothing of it
// is acknowledged, and the message without the offset waited for the
// partition's progress read with the one before it (applied ahead of it, it
// would have opened a transaction of its own and split this one).
func TestCoreExactlyOnceMessageWithoutOffsetStallsItsTransactionWhole(t *testing.T) {
	st := newStepper(t, eoYAML, false)
	st.k.learns = true
	s := newSrc("a1")
	msgs := txnMsgs(s, "p0", "t1", 1)
	c1 := st.write(msgs[0])
	c2 := st.write(withoutOffset(msgs[1]))
	assert.Len(t, st.k.progressWait["p0"], 2, "both wait for the partition's progress")
	require.True(t, st.k.progressRead("p0", st.k.progressGen["p0"], progressEntry{}, st.now))
	st.check()
	assert.Equal(t, []string{"t1:stalled"}, st.states("a1", "p0"), "one transaction, refused whole")
	require.Error(t, st.part("a1", "p0").stalled)
	assert.Contains(t, st.part("a1", "p0").stalled.Error(), "starrocks_source_offset")
	assert.False(t, returned(c1), "nothing of it is acknowledged")
	assert.False(t, returned(c2))
	assert.Empty(t, st.k.dbs, "nothing of it is queued for a load")
	assert.NotEmpty(t, st.fx.logged(logError, "stalled at source transaction \"t1\"", "starrocks_source_offset"))

	// at_least_once takes the same messages (no progress to tell a replay
	// by, nothing it promises about one).
	st2 := newStepper(t, "commit_interval: 100ms\n", false)
	s2 := newSrc("a1")
	msgs2 := txnMsgs(s2, "p0", "t1", 1)
	st2.write(msgs2[0])
	st2.write(withoutOffset(msgs2[1]))
	assert.Equal(t, []string{"t1:queued"}, st2.states("a1", "p0"))
}

// arrivalNumbered marks the offsets of msgs as the txn_assembler's arrival
// counter (contract.Meta.ArrivalOffset), as it stamps a source without
// positions.
func arrivalNumbered(msgs ...*service.Message) []*service.Message {
	for _, m := range msgs {
		meta, err := contract.Read(m)
		if err != nil {
			panic(err)
		}
		meta.ArrivalOffset = true
		contract.Write(m, meta)
	}
	return msgs
}

// Under exactly_once an arrival counter is never compared with the
// progress. A restarted assembler numbers from 0 again, at or below what
// StarRocks holds of the partition: taken for positions, its new
// transactions were acknowledged as replays without being loaded. Such a
// transaction is refused whole instead (here its partition stalls), with an
// error naming the assembler's source_offset field and kafka_offset;
// at_least_once, which compares no progress, loads it as before.
func TestCoreExactlyOnceArrivalCounterIsRefusedNotTakenForAReplay(t *testing.T) {
	st := newStepper(t, eoYAML, false)
	st.k.learns = true
	s := newSrc("a1")
	msgs := arrivalNumbered(txnMsgs(s, "p0", "t1", 1)...)
	c1 := st.write(msgs[0])
	c2 := st.write(msgs[1])
	require.True(t, st.k.progressRead("p0", st.k.progressGen["p0"], progressEntry{through: 100, hasThrough: true}, st.now), "StarRocks holds the partition through offset 100")
	st.check()
	assert.Zero(t, st.fx.counts[fmt.Sprintf("%d/p0", ctrReplaysDropped)], "nothing is dropped as a replay")
	assert.Equal(t, []string{"t1:stalled"}, st.states("a1", "p0"), "one transaction, refused whole")
	require.Error(t, st.part("a1", "p0").stalled)
	for _, want := range []string{"starrocks_source_offset", "arrival counter", "source_offset field", "kafka_offset", `"t1"`} {
		assert.Contains(t, st.part("a1", "p0").stalled.Error(), want)
	}
	assert.False(t, returned(c1), "nothing of it is acknowledged")
	assert.False(t, returned(c2))
	assert.Empty(t, st.k.dbs, "nothing of it is queued for a load")
	assert.Empty(t, st.fx.published["p0"], "no committed-through offset comes from a counter")

	st2 := newStepper(t, "commit_interval: 100ms\n", false)
	s2 := newSrc("a1")
	msgs2 := arrivalNumbered(txnMsgs(s2, "p0", "t1", 1)...)
	st2.write(msgs2[0])
	st2.write(msgs2[1])
	assert.Equal(t, []string{"t1:queued"}, st2.states("a1", "p0"), "at_least_once loads it")
}
