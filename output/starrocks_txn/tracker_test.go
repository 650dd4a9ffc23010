package starrocks_txn

import (
	"context"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
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
	es, err := alo.track.learn(ctx, []string{"p0"})
	require.NoError(t, err)
	e := es["p0"]
	assert.Equal(t, progressEntry{}, e, "no progress is kept at_least_once")
	_, ok, err = registry.Get(res).Progress(ctx, "p0")
	require.NoError(t, err)
	assert.False(t, ok, "no progress reader for the input")

	eo, res, _ := eoOutput(t, f, nil, "")
	require.IsType(t, &exactlyOnceTracking{}, eo.track)
	s := newSrc("asm")
	waitAll(t, []chan error{writeAsync(eo, service.MessageBatch(txnMsgs(s, "p0", "t1", 1)))}, 5*time.Second)
	es, err = eo.track.learn(ctx, []string{"p0"})
	require.NoError(t, err)
	e = es["p0"]
	assert.True(t, e.hasThrough)
	assert.Equal(t, int64(2), e.through, "the progress the commit wrote")
	off, ok, err := registry.Get(res).Progress(ctx, "p0")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, int64(2), off, "the input reads the same progress")
}

// A cycle's writer row is numbered at least as high as the rows StarRocks
// holds of the writer (an anchor committed for it, or for an earlier cycle
// with a higher label): merge_condition would otherwise keep the older row,
// and the row could not tell whether the cycle committed.
func TestWriterRowIsNumberedAboveTheRowsHeld(t *testing.T) {
	f := newFakeSR()
	o, _, _ := eoOutput(t, f, nil, "")
	o.mu.Lock()
	o.core.db("test")
	w := o.workers["test"]
	o.mu.Unlock()
	w.labels.durable(5, []int64{3}, time.Now())
	label := starrocks.SeqLabel("benthos", "test", o.writer, 3)
	require.NoError(t, f.Begin(context.Background(), w.txn(label)))
	c := &cycle{label: label, n: 3}
	wt := o.track.(*exactlyOnceTracking)
	require.NoError(t, wt.loadWriterRow(context.Background(), w, c))
	f.mu.Lock()
	rows := f.txns[label].pending[writersTable(defaultProgressTable)]
	f.mu.Unlock()
	require.Len(t, rows, 1)
	assert.Equal(t, float64(5), rows[0]["label_number"], "numbered as the highest row held, not below it")
	assert.Equal(t, label, rows[0]["label"])
	assert.Equal(t, int64(5), c.rowTop)
}
