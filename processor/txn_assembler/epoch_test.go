package txnassembler

import (
	"context"
	"strconv"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
)

func epoch(e uint64, msgs ...*service.Message) []*service.Message {
	for _, m := range msgs {
		m.MetaSetMut(contract.KeyPartitionEpoch, strconv.FormatUint(e, 10))
	}
	return msgs
}

// The input's assignment epoch is copied into the contract of every message
// emitted for a message, END markers included.
func TestEpochIsCopiedIntoTheContract(t *testing.T) {
	p, res := newProc(t, `{}`)
	e := registry.Get(res).Assign("t/0")
	s := &src{topic: "t", part: 0}
	got := readAll(t, run(t, p, epoch(e, s.begin("A"), s.data("A", `{"id":1}`), s.end("A"))...))
	require.Len(t, got, 2)
	for _, g := range got {
		assert.True(t, g.HasEpoch)
		assert.Equal(t, e, g.Epoch)
	}
	assert.True(t, got[1].Marker)

	// Without the key (a non-Kafka source) no epoch is written.
	u := &src{topic: "u", part: 0}
	plain := readAll(t, run(t, p, u.data("B", `{"id":2}`), u.end("B")))
	require.Len(t, plain, 2)
	assert.False(t, plain[0].HasEpoch)
}

// A late batch of a revoked assignment is dropped: it must not recreate the
// reset partition state (its offsets would make the new owner's re-read look
// like replays, and its open transaction would swallow the new owner's
// rows).
func TestStaleEpochMessagesAreDropped(t *testing.T) {
	p, res := newProc(t, `{}`)
	reg := registry.Get(res)
	e1 := reg.Assign("t/0")
	s := &src{topic: "t", part: 0}
	other := &src{topic: "t", part: 1}
	reg.Assign("t/1")
	run(t, p, epoch(e1, s.begin("A"), s.data("A", `{"id":1}`))...)
	require.NoError(t, reg.Fence(context.Background(), "t/0"))

	// The rest of A (same epoch) arrives after the fence, with a message
	// of another partition: only that one comes out.
	late := epoch(e1, s.data("A", `{"id":2}`), s.end("A"))
	got := readAll(t, run(t, p, append(late, epoch(1, other.data("Z", `{"id":9}`))...)...))
	require.Len(t, got, 1)
	assert.Equal(t, "Z", got[0].TxnID)
	p.mu.Lock()
	_, exists := p.parts["t/0"]
	p.mu.Unlock()
	assert.False(t, exists, "the fenced partition's state was not recreated")

	// A batch made only of stale messages leaves nothing (acked at once;
	// the input ignores acknowledgements after a revoke).
	assert.Nil(t, run(t, p, epoch(e1, s.data("A", `{"id":3}`))...))

	// The new assignment re-reads A from its start: a clean transaction.
	e2 := reg.Assign("t/0")
	s.next = 0
	again := readAll(t, run(t, p, epoch(e2, s.begin("A"), s.data("A", `{"id":1}`), s.data("A", `{"id":2}`), s.end("A"))...))
	require.Len(t, again, 3)
	for _, g := range again {
		assert.NoError(t, g.Err)
		assert.Equal(t, "A", g.TxnID)
		assert.Equal(t, e2, g.Epoch)
	}
	assert.True(t, again[2].TxnEnd)
	// And an older epoch stays stale after the re-assignment.
	assert.Nil(t, run(t, p, epoch(e1, s.data("A", `{"id":4}`))...))
}

func TestMalformedEpochIsFlagged(t *testing.T) {
	p, _ := newProc(t, `{}`)
	s := &src{topic: "t", part: 0}
	m := s.data("A", `{"id":1}`)
	m.MetaSetMut(contract.KeyPartitionEpoch, "minus one")
	out := run(t, p, m)
	require.Len(t, out, 1)
	require.Error(t, out[0].GetError())
	assert.Contains(t, out[0].GetError().Error(), contract.KeyPartitionEpoch)
	g := read(t, out[0])
	assert.False(t, g.HasEpoch)
}
