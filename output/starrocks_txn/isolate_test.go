package starrocks_txn

import (
	"fmt"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// A commit StarRocks refuses for one transaction's rows: the cycle is
// committed again in groups until that transaction stands alone and goes to
// dead_letter; the other eleven commit, each key in order.
func TestFilteredRowsAtCommitAreIsolated(t *testing.T) {
	f := newFakeSR()
	f.hook = func(op string, ft *fakeTxn, table string) (error, bool) {
		if op != "commit" {
			return nil, false
		}
		for _, rows := range ft.pending {
			for _, r := range rows {
				if r["bad"] == true {
					ft.state = starrocks.StateAborted
					return srErr("commit", starrocks.ClassPerTxn, "abnormal data more than max filter rate"), true
				}
			}
		}
		return nil, false
	}
	dl := &fakeDL{}
	f.commitGate = make(chan struct{})
	o, _ := testOutput(t, "commit_interval: 100ms\n", f, dl)
	s := newSrc("a1")
	var chs []chan error
	want := map[string]int{}
	for i := 0; i < 12; i++ {
		id := fmt.Sprintf("t%d", i)
		body := map[string]any{"id": fmt.Sprintf("p%d-k%d", i%2, i%3), "v": i, "txn": id}
		if i == 7 {
			body["bad"] = true
		} else {
			want[id] = 1
		}
		chs = append(chs, writeAsync(o, service.MessageBatch{s.row(fmt.Sprintf("p%d", i%2), id, "a", body, true)}))
	}
	// All twelve are complete before the first commit, held at the gate,
	// resolves.
	waitCommitting(t, o)
	waitCore(t, o, "all twelve are committable", func(k *core) bool { return k.committable == 12 })
	close(f.commitGate)
	waitAll(t, chs, 10*time.Second)
	assert.Equal(t, []string{"t7"}, dl.txnIDs())
	assertAtomic(t, f, want)
	// Per key order kept.
	last := map[string]int{}
	for _, r := range f.rows("a") {
		v := int(r["v"].(float64))
		assert.Greater(t, v, last[idOf(r)]-1)
		last[idOf(r)] = v
	}
}
