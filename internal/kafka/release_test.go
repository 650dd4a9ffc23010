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
	log := service.MockResources().Logger()

	var mu sync.Mutex
	var fenced []string
	var fencedAt []time.Time
	fence := func(ctx context.Context, id string) error {
		dl, ok := ctx.Deadline()
		assert.True(t, ok)
		assert.WithinDuration(t, time.Now().Add(g.RevokeTimeout), dl, 100*time.Millisecond)
		time.Sleep(50 * time.Millisecond) // both fences overlap
		mu.Lock()
		defer mu.Unlock()
		fenced = append(fenced, id)
		fencedAt = append(fencedAt, time.Now())
		if id == "b/1" {
			return errors.New("fence refused")
		}
		return nil
	}
	delivered := time.Now()
	start := time.Now()
	var committedAt time.Time
	err := g.Release(context.Background(), log, []string{"a/0", "b/1"}, delivered, fence, func(ctx context.Context) error {
		dl, ok := ctx.Deadline()
		assert.True(t, ok)
		assert.WithinDuration(t, time.Now().Add(g.RebalanceTimeout-g.RevokeTimeout), dl, 100*time.Millisecond)
		committedAt = time.Now()
		return errors.New("commit refused")
	})
	assert.EqualError(t, err, "commit refused")
	sort.Strings(fenced)
	assert.Equal(t, []string{"a/0", "b/1"}, fenced)
	for _, at := range fencedAt {
		// The drain: revoke_timeout/4 = 100ms after the delivery.
		assert.GreaterOrEqual(t, at.Sub(delivered), 100*time.Millisecond)
		assert.True(t, committedAt.After(at), "commit before a fence")
	}
	assert.Less(t, time.Since(start), 250*time.Millisecond, "fences ran one after the other")

	fenced = nil
	require.NoError(t, g.Release(context.Background(), log, []string{"c/2"}, time.Time{}, fence, nil))
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
