package starrocks_txn

import (
	"fmt"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every assembler instance is a seq source: a restarted stream brings new
// ones. A source that has been idle, with nothing pending, held or live,
// is forgotten with its partitions' states; if it sends again, its order
// goes on where it stopped (no gap to wait for).
func TestIdleSeqSourcesAreForgottenAndResume(t *testing.T) {
	f := newFakeSR()
	o, _ := testOutput(t, "commit_interval: 100ms\nsequence_gap_timeout: 1h\n", f, nil, func(o *Output) { o.core.sourceIdle = 100 * time.Millisecond })
	var srcs []*src
	var chs []chan error
	want := map[string]int{}
	for i := 0; i < 20; i++ {
		s := newSrc(fmt.Sprintf("asm-%d", i))
		srcs = append(srcs, s)
		id := fmt.Sprintf("t%d", i)
		want[id] = 2
		chs = append(chs, writeAsync(o, service.MessageBatch(txnMsgs(s, "p0", id, i))))
	}
	waitAll(t, chs, 5*time.Second)
	require.Eventually(t, func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return len(o.core.seqs) == 0 && len(o.core.parts) == 0
	}, 5*time.Second, 10*time.Millisecond, "idle sources and their partition states are forgotten")
	o.mu.Lock()
	assert.Len(t, o.core.retiredSeqs.next, 20)
	o.mu.Unlock()
	// The first source goes on with seq 3: admitted at once.
	waitAll(t, []chan error{writeAsync(o, service.MessageBatch(txnMsgs(srcs[0], "p0", "again", 99)))}, 5*time.Second)
	want["again"] = 2
	assertAtomic(t, f, want)
	o.mu.Lock()
	defer o.mu.Unlock()
	assert.Len(t, o.core.retiredSeqs.next, 19, "the source that came back is live again")
}

// The forgotten sources whose next seq is kept are bounded.
func TestRetiredSourcesAreBounded(t *testing.T) {
	var r retiredSources
	for i := 0; i < maxRetiredSources+10; i++ {
		r.put(fmt.Sprintf("s%d", i), int64(i))
	}
	assert.Len(t, r.next, maxRetiredSources)
	assert.Len(t, r.order, maxRetiredSources)
	_, ok := r.take("s0")
	assert.False(t, ok, "the oldest are dropped first")
	n, ok := r.take(fmt.Sprintf("s%d", maxRetiredSources+9))
	assert.True(t, ok)
	assert.Equal(t, int64(maxRetiredSources+9), n)
	assert.Len(t, r.next, maxRetiredSources-1)
}
