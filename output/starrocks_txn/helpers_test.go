package starrocks_txn

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
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
	pc, err := parseTestYAML("load_urls: [ http://fake:8030 ]\n"+yaml, nil)
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

// paced calls send(i) for i from 0 to n-1, send(i) at about start +
// i·over/n, and returns start: traffic spread over the wall clock, for the
// tests of what the output does per second or per commit cycle and of
// faults that must land mid-stream.
func paced(n int, over time.Duration, send func(i int)) time.Time {
	start := time.Now()
	for i := 0; i < n; i++ {
		send(i)
		// Real time: the output under test switches, loads and commits on
		// the wall clock (miniInterval, commit_interval, txn_timeout).
		time.Sleep(time.Until(start.Add(time.Duration(i+1) * over / time.Duration(n))))
	}
	return start
}

// waitCore waits until cond holds of o's core, read under o.mu: how a test
// of a running output waits for a step (a message admitted, a partition
// stalled, a call held at the cap) instead of sleeping until it has
// probably happened.
func waitCore(t *testing.T, o *Output, msg string, cond func(k *core) bool) {
	t.Helper()
	require.Eventually(t, func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return cond(o.core)
	}, 10*time.Second, 2*time.Millisecond, msg)
}

// stepCore runs one step of o's core under o.mu, as the output's own
// goroutines do: a test uses it to run a check (a sequence gap, the
// starvation report) at a time of its choosing.
func stepCore(o *Output, step func(k *core)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	step(o.core)
}

// quiesce waits until nothing the output holds can still become visible:
// no transaction is committable (active, queued, in a cycle), no database
// worker has a queue, a step under way or a commit goroutine, no progress
// read is under way, and nothing is on its way to dead_letter. A test that
// asserts something never committed asserts it after quiesce rather than
// after a sleep: had the output been about to commit it, it would have.
// Open transactions and stalled partitions stay as they are.
func quiesce(t *testing.T, o *Output) {
	t.Helper()
	waitCore(t, o, "the output is quiet", func(k *core) bool {
		if k.committable != 0 || len(k.progressLoading) > 0 || len(k.dlLanes) > 0 {
			return false
		}
		for _, q := range k.dbs {
			if len(q.queue) > 0 || q.busy || q.committing > 0 {
				return false
			}
		}
		return true
	})
	checkLifecycle(t)
}

// waitLogged waits until a line buf got after its first from bytes holds
// every one of parts, and returns the offset just past that line: a test
// waits so for a step the output logs (a commit held for a lease, a label
// rolled back).
func waitLogged(t *testing.T, buf *logBuffer, from int, msg string, parts ...string) int {
	t.Helper()
	end := -1
	require.Eventually(t, func() bool {
		text := buf.From(from)
		pos := 0
		for _, line := range strings.SplitAfter(text, "\n") {
			pos += len(line)
			all := strings.HasSuffix(line, "\n")
			for _, p := range parts {
				all = all && strings.Contains(line, p)
			}
			if all {
				end = from + pos
				return true
			}
		}
		return false
	}, 10*time.Second, 2*time.Millisecond, msg)
	return end
}

// openTxn reports whether partition p of seq source src has open source
// transaction txn: its messages so far are admitted.
func openTxn(k *core, src, p, txn string) bool {
	pt := k.parts[pkey{source: src, partition: p}]
	return pt != nil && pt.open != nil && pt.open.id == txn
}

// pendingSeqs is how many messages of seq source src wait in the sequencer
// for an earlier seq.
func pendingSeqs(k *core, src string) int {
	if s := k.seqs[src]; s != nil {
		return len(s.pending)
	}
	return 0
}

// stalledAt is the transaction partition p of seq source src stalled at,
// "" while it has not.
func stalledAt(k *core, src, p string) string {
	if pt := k.parts[pkey{source: src, partition: p}]; pt != nil && pt.stalled != nil {
		return pt.stalledTxn
	}
	return ""
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

// parseTestYAML parses an output config of a test. A config without
// mysql_address cannot check schemas (schema_evolution's default, evolve,
// needs it), so unless it names a mode it gets schema_evolution: ignore,
// the output's behaviour before schema checks existed; one with
// mysql_address keeps the default.
func parseTestYAML(yaml string, env *service.Environment) (*service.ParsedConfig, error) {
	if !strings.Contains(yaml, "schema_evolution:") && !strings.Contains(yaml, "mysql_address:") {
		yaml += "\nschema_evolution: ignore\n"
	}
	return outputSpec().ParseYAML(yaml, env)
}
