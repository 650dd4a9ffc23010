package starrocks_txn

import (
	"context"
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"
)

// Once a WriteBatch call returned (its messages committed), the output
// holds nothing of its messages: a partition's resolved transactions, the
// messages in them and their rows are garbage, while the partition goes on
// with later transactions. A reference left behind (a resolved transaction
// still in the backing array of a partition's order) would hold every
// committed message until the array is reallocated: about one more
// commit's worth of messages in memory (docs/benchmark.md, "Memory in
// flight").
func TestCommittedMessagesAreNotHeld(t *testing.T) {
	f := newFakeSR()
	o, _ := testOutput(t, "commit_interval: 20ms\n", f, nil)
	s := newSrc("a1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	var committed []weak.Pointer[service.Message]
	write := func(txn string, keep bool) {
		batch := service.MessageBatch(txnMsgs(s, "p0", txn, 1))
		if keep {
			for _, m := range batch {
				committed = append(committed, weak.Make(m))
			}
		}
		require.NoError(t, o.WriteBatch(ctx, batch))
	}
	for _, id := range []string{"t1", "t2", "t3"} {
		write(id, true)
	}
	// The partition goes on: an open transaction keeps it (and its order)
	// alive.
	open := s.row("p0", "t4", "a", map[string]any{"id": "t4", "txn": "t4"}, false)
	done := writeAsync(o, service.MessageBatch{open})
	defer func() {
		end := s.marker("p0", "t4", false)
		require.NoError(t, o.WriteBatch(ctx, service.MessageBatch{end}))
		require.NoError(t, <-done)
	}()

	require.Eventually(t, func() bool {
		runtime.GC()
		for _, w := range committed {
			if w.Value() != nil {
				return false
			}
		}
		return true
	}, 10*time.Second, 50*time.Millisecond, "the messages of the committed WriteBatch calls are collected")
}

// A gated transaction released from its partition's gate is not held by
// the array behind the gate's slice.
func TestReleasedGatedTransactionIsNotHeld(t *testing.T) {
	p := &partition{}
	first := &srcTxn{id: "t1"}
	w := weak.Make(first)
	p.gated = append(p.gated, first, &srcTxn{id: "t2"})
	first = nil
	p.popGated()
	require.Len(t, p.gated, 1)
	require.Eventually(t, func() bool {
		runtime.GC()
		return w.Value() == nil
	}, 5*time.Second, 10*time.Millisecond, "t1 is collected while t2 is gated")
	runtime.KeepAlive(p)
}
