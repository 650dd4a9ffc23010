package starrocks_txn

import (
	"context"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A partition is user data (starrocks_partition): one whose name is not
// valid UTF-8 would have its progress row loaded as JSON, where the invalid
// bytes become U+FFFD, so a read by its own name finds no row of it (the
// fake) or finds it under another name (StarRocks, which reads the invalid
// bytes of the statement as U+FFFD too, and the emulator: the batched read
// keys what it finds by the name StarRocks answers). After a restart its
// replays would be taken for new source transactions and applied a second
// time. exactly_once refuses such a partition's transactions whole, in
// every run, with an error naming starrocks_partition; a valid name beside
// it is applied once.
func TestExactlyOnceInvalidUTF8PartitionIsNeverAppliedTwice(t *testing.T) {
	const bad = "t/\xff"
	f := newFakeSR()
	s := newSrc("asm")
	msgs := append(txnMsgs(s, bad, "h1", 1), txnMsgs(s, "t/0", "h2", 2)...)
	for run, source := range []string{"", "asm-2"} {
		dl := &fakeDL{}
		o, _, _ := eoOutput(t, f, dl, "")
		batch := msgs
		if source != "" {
			batch = replay(msgs, source)
		}
		waitAll(t, []chan error{writeAsync(o, service.MessageBatch(batch))}, 30*time.Second)
		quiesce(t, o)
		require.NoError(t, o.Close(context.Background()))
		assert.Equal(t, []string{"h1"}, dl.txnIDs(), "run %d: the transaction of the partition whose name is not valid UTF-8 goes to dead_letter", run+1)
		dl.mu.Lock()
		if assert.Len(t, dl.batches, 1) {
			reason, _ := dl.batches[0][0].MetaGet(deadLetterReasonKey)
			assert.Contains(t, reason, "not valid UTF-8")
			assert.Contains(t, reason, "starrocks_partition")
		}
		dl.mu.Unlock()
	}
	assert.Equal(t, map[string]int{"h2": 1}, countIDs(f.rows("a")), "h1 never loaded, h2 once")
}
