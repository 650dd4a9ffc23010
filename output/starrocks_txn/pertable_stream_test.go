package starrocks_txn

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A stream in per-table mode against StarRocks 3.3 loads every source
// transaction whole, in each tracking mode: without writer rows (no
// decision: the parts committed one by one), with writer rows (a decision
// per cycle) and exactly_once (a decision and a progress part). A reader may
// see part of a source transaction only while a cycle commits.
func TestPerTableLoadsWholeSourceTransactions(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  ptRun
	}{
		{"at_least_once", ptRun{}},
		{"writer_rows", ptRun{writerRows: true}},
		{"exactly_once", ptRun{semantic: semanticExactlyOnce}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := ptEmulator(t)
			res := runPerTable(t, e, tc.run)
			assert.NotEmpty(t, res.metrics.Timings("starrocks_txn_commit_window_ns"), "the commit window is measured")
			assert.Positive(t, res.metrics.Counter("starrocks_txn_commits"))
			assert.Zero(t, res.metrics.Counter("starrocks_txn_broken_cycles"))
		})
	}
}
