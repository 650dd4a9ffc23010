package kafka

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReleaseDrainsFencesThenCommits: a fence waits for a batch delivered a
// moment ago, every id is fenced (in parallel, within revoke_timeout), and
// the commit runs after every fence, with the rest of rebalance_timeout; a
// loss (no commit) only fences.
func TestReleaseDrainsFencesThenCommits(t *testing.T) {
	g := GroupConfig{RevokeTimeout: 400 * time.Millisecond, RebalanceTimeout: time.Second}
	// The drain: revoke_timeout/4 after the delivery.
	const drain = 100 * time.Millisecond
	log := service.MockResources().Logger()

	var mu sync.Mutex
	var fenced []string
	var fencedAt []time.Time
	delivered := time.Now()
	// fences returns a fence that records its calls; each of the first
	// parallel calls waits until all of them began, which fences run one
	// after the other never do (the first gives up at its deadline).
	fences := func(parallel int) func(context.Context, string) error {
		var entered sync.WaitGroup
		entered.Add(parallel)
		all := make(chan struct{})
		go func() {
			entered.Wait()
			close(all)
		}()
		return func(ctx context.Context, id string) error {
			dl, ok := ctx.Deadline()
			assert.True(t, ok)
			// revoke_timeout from the fences' start, after the drain.
			assert.False(t, dl.After(time.Now().Add(g.RevokeTimeout)), "the fence's deadline is more than revoke_timeout away")
			assert.False(t, dl.Before(delivered.Add(drain+g.RevokeTimeout)), "the fence's deadline was set before the drain ended")
			entered.Done()
			select {
			case <-all:
			case <-ctx.Done():
				t.Errorf("fence of %s: the other fences never began while it ran (they ran one after the other)", id)
			}
			mu.Lock()
			defer mu.Unlock()
			fenced = append(fenced, id)
			fencedAt = append(fencedAt, time.Now())
			if id == "b/1" {
				return errors.New("fence refused")
			}
			return nil
		}
	}
	var committedAt time.Time
	err := g.Release(context.Background(), log, []string{"a/0", "b/1"}, delivered, fences(2), func(ctx context.Context) error {
		dl, ok := ctx.Deadline()
		assert.True(t, ok)
		committedAt = time.Now()
		// The rest of rebalance_timeout, from after the last fence.
		rest := g.RebalanceTimeout - g.RevokeTimeout
		assert.False(t, dl.After(committedAt.Add(rest)), "the commit's deadline is more than the rest of rebalance_timeout away")
		mu.Lock()
		defer mu.Unlock()
		for _, at := range fencedAt {
			assert.False(t, dl.Before(at.Add(rest)), "the commit's deadline was set before a fence ended")
		}
		return errors.New("commit refused")
	})
	assert.EqualError(t, err, "commit refused")
	sort.Strings(fenced)
	assert.Equal(t, []string{"a/0", "b/1"}, fenced)
	for _, at := range fencedAt {
		assert.GreaterOrEqual(t, at.Sub(delivered), drain)
		assert.True(t, committedAt.After(at), "commit before a fence")
	}

	fenced = nil
	require.NoError(t, g.Release(context.Background(), log, []string{"c/2"}, time.Time{}, fences(1), nil))
	assert.Equal(t, []string{"c/2"}, fenced)
}

// TestReleaseDrainIsBounded: the drain never waits more than
// MaxRevokeDrain, whatever revoke_timeout is.
func TestReleaseDrainIsBounded(t *testing.T) {
	g := GroupConfig{RevokeTimeout: 20 * time.Second, RebalanceTimeout: time.Minute}
	start := time.Now()
	require.NoError(t, g.Release(context.Background(), service.MockResources().Logger(), []string{"a/0"}, time.Now(),
		func(context.Context, string) error { return nil }, nil))
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, MaxRevokeDrain)
	assert.Less(t, took, MaxRevokeDrain+200*time.Millisecond)
}
