package integration

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/testkit"
)

// The checks of these tests can fail: run deliberately broken pipelines
// through the same harness and see each check catch what it is there for.
func TestHarnessCatchesBrokenPipelines(t *testing.T) {
	t.Parallel()

	// read_uncommitted delivers the records of aborted producer
	// transactions: their rows must be caught.
	t.Run("aborted rows", func(t *testing.T) {
		t.Parallel()
		abortedEvents := func(r *rig, src *source) int {
			got, err := r.target(context.Background())
			if err != nil {
				return 0
			}
			src.mu.Lock()
			defer src.mu.Unlock()
			n := 0
			for _, e := range got.Events {
				id, _ := strconv.ParseInt(e, 10, 64)
				if src.abortedEvents[id] {
					n++
				}
			}
			return n
		}
		// The reader must have read an aborted order value too: the run
		// goes on until both showed, not only the events (it stopped at
		// the first aborted event before, and the reader had not yet read
		// an aborted order value on a loaded machine).
		abortedOrdersSeen := func(src *source, rd *reader) int {
			src.mu.Lock()
			defer src.mu.Unlock()
			return rd.saw(func(v orderVersion) bool { return src.abortedOrders[v] })
		}
		r, src, rd := runBroken(t, pipeOpts{group: "g-uncommitted", batchCount: 3, isolation: "read_uncommitted"},
			func(r *rig, src *source, rd *reader) bool {
				return abortedEvents(r, src) > 0 && abortedOrdersSeen(src, rd) > 0
			})
		assert.Positive(t, abortedEvents(r, src), "events of aborted producer transactions are found in the target")
		assert.Positive(t, abortedOrdersSeen(src, rd), "the reader saw order values only aborted transactions wrote")
	})

	// A hand-written mapping that makes every message its own transaction
	// (what a naive CDC loader does): readers must see torn transactions.
	// Its batches are cut by count alone (a naive loader tells the input
	// nothing about transactions), so a source transaction's messages land
	// in different commits.
	t.Run("torn transactions", func(t *testing.T) {
		t.Parallel()
		_, _, rd := runBroken(t, pipeOpts{group: "g-split", batchCount: 3, spanBatches: true, processors: `    - mapping: 'root = if this.type != "DATA" { deleted() }'
    - mapping: |
        meta starrocks_partition = "%s/%s".format(@kafka_topic, @kafka_partition.string())
        meta starrocks_source_offset = @kafka_offset.string()
        meta starrocks_txn_id = @kafka_offset.string()
        meta starrocks_txn_end = "true"
        meta starrocks_seq = counter().string()
        meta starrocks_seq_source = "split-every-message"
        meta starrocks_database = this.database
        meta starrocks_table = this.table
        root = this.json.parse_json()
`}, func(_ *rig, _ *source, rd *reader) bool { return rd.torn.Load() > 0 })
		assert.NotEmpty(t, rd.problems, "the reader saw orders without all their items")
	})
}

// runBroken runs traffic through a pipeline built from o until caught says
// the broken behaviour showed (at most 20 s), then stops it and the reader.
func runBroken(t *testing.T, o pipeOpts, caught func(*rig, *source, *reader) bool) (*rig, *source, *reader) {
	seed := testSeed(t)
	r := newRig(t, 4)
	src := newSource(t, r, seed, 0.3)
	rd := startReader(r.db, true)
	p := r.startPipeline(t, "broken", o)
	ctx, cancel := context.WithCancel(context.Background())
	wait := src.background(ctx, 0, 150)
	testkit.Poll(20*time.Second, func() bool { return caught(r, src, rd) })
	cancel()
	require.NoError(t, wait())
	p.stop(t, 10*time.Second)
	rd.stop()
	return r, src, rd
}
