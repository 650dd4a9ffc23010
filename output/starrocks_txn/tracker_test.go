package starrocks_txn

import (
	"context"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
)

// Each configuration gets its tracker, and only exactly_once gives the
// partition registry a progress reader.
func TestTrackerOfTheConfiguration(t *testing.T) {
	ctx := context.Background()
	f := newFakeSR()
	fp := &fakeProgress{f: f, table: defaultProgressTable}

	plain, res := testOutput(t, "", f, nil)
	assert.IsType(t, noTracking{}, plain.track)
	assert.False(t, plain.track.learnsPartitions(), "no partition waits for anything")
	c := &cycle{label: "l", n: 1}
	require.NoError(t, plain.track.loadRows(ctx, nil, c))
	require.NoError(t, plain.track.beforeCommit(ctx, nil, c))
	assert.False(t, c.progressLoaded || c.loaded, "nothing loaded under the label")
	_, ok, err := registry.Get(res).Progress(ctx, "p0")
	require.NoError(t, err)
	assert.False(t, ok)

	alo, res := testOutput(t, "pipeline_id: pl\nmysql_address: 127.0.0.1:1\n", f, nil)
	alo.setProgressStore(fp)
	require.IsType(t, &writerTracking{}, alo.track)
	assert.True(t, alo.track.learnsPartitions(), "a partition waits for the take-over check")
	e, err := alo.track.learn(ctx, "p0")
	require.NoError(t, err)
	assert.Equal(t, progressEntry{}, e, "no progress is kept at_least_once")
	_, ok, err = registry.Get(res).Progress(ctx, "p0")
	require.NoError(t, err)
	assert.False(t, ok, "no progress reader for the input")

	eo, res, _ := eoOutput(t, f, nil, "")
	require.IsType(t, &exactlyOnceTracking{}, eo.track)
	s := newSrc("asm")
	waitAll(t, []chan error{writeAsync(eo, service.MessageBatch(txnMsgs(s, "p0", "t1", 1)))}, 5*time.Second)
	e, err = eo.track.learn(ctx, "p0")
	require.NoError(t, err)
	assert.True(t, e.hasThrough)
	assert.Equal(t, int64(2), e.through, "the progress the commit wrote")
	off, ok, err := registry.Get(res).Progress(ctx, "p0")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, int64(2), off, "the input reads the same progress")
}
