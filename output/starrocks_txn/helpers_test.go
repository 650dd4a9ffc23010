package starrocks_txn

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
)

// testOutput builds an output over the fake from YAML; opts change it
// before its loops start.
func testOutput(t *testing.T, yaml string, f txnClient, dl deadLetter, changes ...func(*Output)) (*Output, *service.Resources) {
	t.Helper()
	pc, err := outputSpec().ParseYAML("load_urls: [ http://fake:8030 ]\n"+yaml, nil)
	require.NoError(t, err)
	c, err := configFromParsed(pc)
	require.NoError(t, err)
	var opts []service.MockResourcesOptFn
	if os.Getenv("STARROCKS_TXN_TEST_LOG") != "" {
		opts = append(opts, service.MockResourcesOptUseLogger(service.NewLoggerFromSlog(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})))))
	}
	res := service.MockResources(opts...)
	o := newOutput(c, f, dl, res)
	for _, change := range changes {
		change(o)
	}
	watchLifecycle(t, o, f)
	t.Cleanup(func() { checkLifecycle(t) })
	require.NoError(t, o.Connect(context.Background()))
	t.Cleanup(func() {
		// A test may leave a commit hanging: Close waits for it only so
		// long.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = o.Close(ctx)
	})
	return o, res
}

const eoYAML = "commit_interval: 100ms\nsemantic: exactly_once\npipeline_id: pl\nmysql_address: 127.0.0.1:1\n"

// withClock makes an output read the time from now.
func withClock(now func() time.Time) func(*Output) { return func(o *Output) { o.now = now } }

// withClient makes an output talk to c instead of the fake it was built
// over (whose calls still run the lifecycle checks).
func withClient(c txnClient) func(*Output) { return func(o *Output) { o.client = c } }

// eoOutput builds an exactly_once output over the fake server.
func eoOutput(t *testing.T, f *fakeSR, dl deadLetter, extra string, opts ...func(*Output)) (*Output, *service.Resources, *fakeProgress) {
	t.Helper()
	o, res := testOutput(t, eoYAML+extra, f, dl, opts...)
	fp := &fakeProgress{f: f, table: defaultProgressTable}
	o.setProgressStore(fp)
	return o, res, fp
}

// src numbers messages of one assembler instance densely, as the
// txn_assembler does.
type src struct {
	mu     sync.Mutex
	name   string
	seq    int64
	offset map[string]int64
}

func newSrc(name string) *src { return &src{name: name, offset: map[string]int64{}} }

// row returns a data row of partition p, source transaction txn.
func (s *src) row(p, txn, table string, body map[string]any, end bool) *service.Message {
	b, _ := json.Marshal(body)
	m := service.NewMessage(b)
	s.stamp(m, p, txn, "test", table, end, false)
	return m
}

// marker returns a body-less END (or abort) marker.
func (s *src) marker(p, txn string, abort bool) *service.Message {
	m := service.NewMessage(nil)
	s.stamp(m, p, txn, "", "", !abort, abort)
	return m
}

func (s *src) stamp(m *service.Message, p, txn, db, table string, end, abort bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	s.offset[p]++
	contract.Write(m, contract.Meta{
		Partition: p, Database: db, Table: table, TxnID: txn, TxnEnd: end, TxnAbort: abort,
		Marker: table == "", HasSeq: true, Seq: s.seq, SeqSource: s.name, HasOffset: true, SourceOffset: s.offset[p],
	})
}

// txnMsgs is one source transaction: rows to a and b, END on the last.
func txnMsgs(s *src, p, id string, n int) []*service.Message {
	return []*service.Message{
		s.row(p, id, "a", map[string]any{"id": id, "txn": id}, false),
		s.row(p, id, "b", map[string]any{"id": id, "txn": id, "n": n}, true),
	}
}

// replay copies msgs as a restarted assembler would emit them again: the
// same offsets, a new seq source numbered from 1.
func replay(msgs []*service.Message, source string) []*service.Message {
	out := make([]*service.Message, 0, len(msgs))
	for i, m := range msgs {
		c := m.Copy()
		meta, _ := contract.Read(c)
		meta.SeqSource, meta.Seq = source, int64(i+1)
		contract.Write(c, meta)
		out = append(out, c)
	}
	return out
}

// withEpoch stamps msgs with a partition assignment epoch, as the kafka_txn
// input does.
func withEpoch(epoch uint64, msgs ...*service.Message) service.MessageBatch {
	for _, m := range msgs {
		m.MetaSetMut(contract.KeyPartitionEpoch, strconv.FormatUint(epoch, 10))
	}
	return service.MessageBatch(msgs)
}

// writeAsync runs WriteBatch in the background; the channel yields its
// result.
func writeAsync(o *Output, b service.MessageBatch) chan error {
	ch := make(chan error, 1)
	go func() { ch <- o.WriteBatch(context.Background(), b) }()
	return ch
}

func waitAll(t *testing.T, chs []chan error, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for i, ch := range chs {
		select {
		case err := <-ch:
			require.NoError(t, err, "batch %d", i)
		case <-deadline:
			t.Fatalf("batch %d of %d not acknowledged within %v", i, len(chs), d)
		}
	}
	checkLifecycle(t)
}

func waitCommitting(t *testing.T, o *Output) {
	t.Helper()
	require.Eventually(t, func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		for _, p := range o.core.parts {
			for _, tx := range p.order {
				if tx.inCommit {
					return true
				}
			}
		}
		return false
	}, 5*time.Second, 5*time.Millisecond, "a commit is in flight")
}

// accounting returns what the output still counts as committable and
// buffered.
func accounting(o *Output) (committable int, buffered int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.core.committable, o.core.buffered
}

// assertAtomic checks that every source transaction's rows became visible in
// exactly one commit, all of them together, and that no row was committed
// twice.
func assertAtomic(t *testing.T, f *fakeSR, wantRows map[string]int) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	commitsOf := map[string]map[string]bool{}
	rowsOf := map[string]int{}
	for _, c := range f.commits {
		for _, rows := range c.rows {
			for _, r := range rows {
				txn := fmt.Sprint(r["txn"])
				if commitsOf[txn] == nil {
					commitsOf[txn] = map[string]bool{}
				}
				commitsOf[txn][c.label] = true
				rowsOf[txn]++
			}
		}
	}
	for txn, n := range wantRows {
		assert.Len(t, commitsOf[txn], 1, "source transaction %s must be in exactly one commit", txn)
		assert.Equal(t, n, rowsOf[txn], "rows of source transaction %s", txn)
	}
}

// countOpen counts labels begun but never loaded (the eager next cycle).
func countOpen(f *fakeSR) int {
	n := 0
	for _, ft := range f.txns {
		if !ft.loaded {
			n++
		}
	}
	return n
}

func idOf(r map[string]any) string {
	switch v := r["id"].(type) {
	case float64:
		return strconv.FormatInt(int64(v), 10)
	case string:
		return v
	}
	return fmt.Sprint(r["id"])
}

func countIDs(rows []map[string]any) map[string]int {
	n := map[string]int{}
	for _, r := range rows {
		n[idOf(r)]++
	}
	return n
}
