package consumer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// committedOf is what the fake input was told of id's committed-through
// offset (-1: nothing; -2: not claimed).
func (f *fakeInput) committedOf(id string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p := f.parts[id]; p != nil {
		return p.committed
	}
	return -2
}

// The output only records committed-through offsets; the shell pulls them
// into the input when its watch signals: forward moves of claimed
// partitions only, never a value published before the claim. (Every commit
// pulls first: input/kafka_txn TestRevokeCommitsWhatTheFenceCommitted.)
func TestCommittedThroughIsPulledIntoTheInput(t *testing.T) {
	c := newCluster(t, 2)
	w := newWorld(t, testYAML(c, "g-pull", "commit_period: 1h\n"), nil)
	// Published before any assignment: the claim forgets it.
	w.reg.PublishCommitted("cdc/0", 99)
	w.connect()
	require.Eventually(t, func() bool { return len(w.in.held()) == 2 }, 10*time.Second, 10*time.Millisecond)
	// A value published after both claims is pulled: that pull took
	// whatever the watch still held from before.
	w.reg.PublishCommitted("cdc/1", 1)
	require.Eventually(t, func() bool { return w.in.committedOf("cdc/1") == 1 }, 5*time.Second, time.Millisecond, "pulled once the watch signals")
	assert.Equal(t, int64(-1), w.in.committedOf("cdc/0"), "a value published before the claim never reaches the assignment")

	w.reg.PublishCommitted("cdc/0", 4)
	require.Eventually(t, func() bool { return w.in.committedOf("cdc/0") == 4 }, 5*time.Second, time.Millisecond, "pulled once the watch signals")
	w.reg.PublishCommitted("cdc/0", 3)
	w.reg.PublishCommitted("other/0", 7)
	w.reg.PublishCommitted("cdc/1", 2)
	require.Eventually(t, func() bool { return w.in.committedOf("cdc/1") == 2 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, int64(4), w.in.committedOf("cdc/0"), "an offset never moves back")
}
