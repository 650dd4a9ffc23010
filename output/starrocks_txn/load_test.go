package starrocks_txn

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

func TestTxnInProcessingResendsLoad(t *testing.T) {
	f := newFakeSR()
	busy := 2
	f.hook = func(op string, ft *fakeTxn, table string) (error, bool) {
		if op == "load" && busy > 0 {
			busy--
			return srErr("load", starrocks.ClassRetrySafe, "Transaction is in processing"), true
		}
		return nil, false
	}
	o, _ := testOutput(t, "commit_interval: 100ms\n", f, nil)
	s := newSrc("a1")
	ch := writeAsync(o, service.MessageBatch{s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, true)})
	waitAll(t, []chan error{ch}, 5*time.Second)
	assertAtomic(t, f, map[string]int{"t1": 1})
	f.mu.Lock()
	assert.Len(t, f.txns, 1+countOpen(f), "no replay under a new label")
	f.mu.Unlock()
}

func TestRowSpecificLoadFailureIsIsolated(t *testing.T) {
	f := newFakeSR()
	dl := &fakeDL{}
	// The load of a body holding the bad row fails for its data only.
	f.hook = func(op string, ft *fakeTxn, table string) (error, bool) {
		if op == "load" && f.lastBodyHasBad {
			return srErr("load", starrocks.ClassPerTxn, "primary key size exceed the limit"), true
		}
		return nil, false
	}
	f.commitGate = make(chan struct{})
	o, _ := testOutput(t, "commit_interval: 100ms\n", f, dl)
	s := newSrc("a1")
	var chs []chan error
	want := map[string]int{}
	for i := 0; i < 8; i++ {
		id := fmt.Sprintf("t%d", i)
		body := map[string]any{"id": i, "txn": id}
		if i == 5 {
			body["bad"] = true
		} else {
			want[id] = 1
		}
		chs = append(chs, writeAsync(o, service.MessageBatch{s.row("p0", id, "a", body, true)}))
	}
	time.Sleep(300 * time.Millisecond)
	close(f.commitGate)
	waitAll(t, chs, 10*time.Second)
	assert.Equal(t, []string{"t5"}, dl.txnIDs())
	assertAtomic(t, f, want)
}

// What a failed load means for its cycle, decided in one place.
func TestClassifyLoad(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want loadOutcome
	}{
		{errors.New("no shared transaction"), loadReplay},
		{&loadError{table: "a", err: srErr("load", starrocks.ClassTransient, "INTERNAL_ERROR")}, loadReplay},
		{&loadError{table: "a", err: srErr("load", starrocks.ClassAmbiguous, "read: connection reset by peer")}, loadReplay},
		{&loadError{table: "a", err: srErr("load", starrocks.ClassPerTxn, "primary key size exceed the limit.")}, loadBadRows},
		{&loadError{table: "a", err: srErr("load", starrocks.ClassPerTxn, "LOAD exception: Failed to find table a in db d")}, loadBadTable},
		{fmt.Errorf("wrapped: %w", &loadError{table: "a", err: srErr("load", starrocks.ClassPerTxn, "Only primary key table support partial update")}), loadBadTable},
	} {
		got, le := classifyLoad(tc.err)
		assert.Equal(t, tc.want, got, "%v", tc.err)
		if tc.want != loadReplay {
			require.NotNil(t, le)
			assert.Equal(t, "a", le.table)
		}
	}
}
