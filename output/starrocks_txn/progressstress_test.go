package starrocks_txn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flakyProgress fails every third read of the progress and takes a moment
// over each, so that fences and new partitions land while reads of many
// partitions are in flight or waiting to be retried.
type flakyProgress struct {
	*fakeProgress
	mu sync.Mutex
	n  int
}

func (fp *flakyProgress) read(ctx context.Context, pipelineID string, partitions []string) (map[string]progressEntry, error) {
	fp.mu.Lock()
	fp.n++
	n := fp.n
	fp.mu.Unlock()
	time.Sleep(time.Millisecond)
	if n%3 == 1 {
		return nil, errors.New("reading the progress: connection reset by peer")
	}
	return fp.fakeProgress.read(ctx, pipelineID, partitions)
}

// Partitions read together while some are fenced during the read or its
// retries and come back (their messages handed again, replays included),
// over rounds: every source transaction is applied exactly once, every
// call is acknowledged, and no read holds a partition at the end (G32).
func TestExactlyOnceReadsTogetherUnderFencesAndFailures(t *testing.T) {
	const parts, rounds = 24, 4
	f := newFakeSR()
	o, _, fp := eoOutput(t, f, nil, "retry_backoff:\n  initial_interval: 1ms\n  max_interval: 5ms\n")
	o.setProgressStore(&flakyProgress{fakeProgress: fp})
	s := newSrc("asm")
	ctx := context.Background()
	for r := range rounds {
		byPart := map[string][]*service.Message{}
		var batch []*service.Message
		for i := range parts {
			p := fmt.Sprintf("p%d", i)
			m := txnMsgs(s, p, fmt.Sprintf("%s-r%d", p, r), r)
			byPart[p] = m
			batch = append(batch, m...)
		}
		ch := writeAsync(o, service.MessageBatch(batch))
		// A few partitions are revoked while the round's reads run.
		var fenced []string
		for j := range 4 {
			fenced = append(fenced, fmt.Sprintf("p%d", (r*7+j*5)%parts))
		}
		var wg sync.WaitGroup
		for j, p := range fenced {
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(time.Duration(j) * time.Millisecond)
				assert.NoError(t, o.fence(ctx, p))
			}()
		}
		wg.Wait()
		waitAll(t, []chan error{ch}, 60*time.Second)
		// They come back: revoked once more (a rebalance), then handed the
		// round's messages again from their committed offset.
		var again []chan error
		for j, p := range fenced {
			require.NoError(t, o.fence(ctx, p))
			again = append(again, writeAsync(o, service.MessageBatch(replay(byPart[p], fmt.Sprintf("asm-r%d-%d", r, j)))))
		}
		waitAll(t, again, 60*time.Second)
	}
	quiesce(t, o)
	for _, table := range []string{"a", "b"} {
		got := countIDs(f.rows(table))
		assert.Len(t, got, parts*rounds, "table %s: every source transaction applied", table)
		for id, c := range got {
			assert.Equal(t, 1, c, "table %s: %s applied %d times", table, id, c)
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	assert.Empty(t, o.core.progressClaimed, "no read holds a partition")
	assert.Empty(t, o.core.progressWait)
}
