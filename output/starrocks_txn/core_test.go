package starrocks_txn

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
)

// recFx is the effects of a core stepped by a test: it records what the
// core asked for, in order, and answers the registry's questions from
// epochs.
type recFx struct {
	// epochs is each partition's current assignment epoch: a message with
	// an older one is stale.
	epochs map[string]uint64
	// started and woken name the databases whose worker was started and
	// woken, in order; progressReads the partitions whose progress read
	// began; dlWakes counts the dead-letter loop's wake-ups.
	started       []string
	woken         []string
	progressReads []string
	dlWakes       int
	// published is every committed-through offset published, per
	// partition, in order; done the WriteBatch calls returned, in order.
	published map[string][]int64
	done      []*call
	logs      []string
	counts    map[string]int64
	gauges    map[string]int64
}

func newRecFx() *recFx {
	return &recFx{epochs: map[string]uint64{}, published: map[string][]int64{}, counts: map[string]int64{}, gauges: map[string]int64{}}
}

func (r *recFx) startWorker(q *dbQueue) { r.started = append(r.started, q.db) }

func (r *recFx) wakeWorker(q *dbQueue) { r.woken = append(r.woken, q.db) }

func (r *recFx) readProgress(part string) { r.progressReads = append(r.progressReads, part) }

func (r *recFx) wakeDeadLetter() { r.dlWakes++ }

func (r *recFx) staleEpoch(it *item) bool {
	cur, ok := r.epochs[it.meta.Partition]
	return it.meta.HasEpoch && it.meta.Partition != "" && ok && it.meta.Epoch < cur
}

func (r *recFx) currentEpoch(part string) uint64 { return r.epochs[part] }

func (r *recFx) publishCommitted(part string, end int64) {
	r.published[part] = append(r.published[part], end)
}

func (r *recFx) callDone(c *call) {
	r.done = append(r.done, c)
	close(c.done)
}

var logLevelNames = [...]string{logDebug: "debug", logInfo: "info", logWarn: "warn", logError: "error"}

func (r *recFx) logf(lvl logLevel, part string, format string, args ...any) {
	r.logs = append(r.logs, fmt.Sprintf("%s [%s] %s", logLevelNames[lvl], part, fmt.Sprintf(format, args...)))
}

func (r *recFx) count(c counterID, n int64, label string) {
	r.counts[fmt.Sprintf("%d/%s", c, label)] += n
}

func (r *recFx) gauge(g gaugeID, v int64, label string) {
	r.gauges[fmt.Sprintf("%d/%s", g, label)] = v
}

// logged returns the lines logged at lvl that contain every one of parts.
func (r *recFx) logged(lvl logLevel, parts ...string) []string {
	var out []string
	for _, l := range r.logs {
		if !strings.HasPrefix(l, logLevelNames[lvl]+" ") {
			continue
		}
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			out = append(out, l)
		}
	}
	return out
}

// stepper steps a core the way the output's goroutines do, with the time
// given explicitly: WriteBatch calls (write), manager ticks (tick), worker
// steps (take, commit) and fences, each one step under what would be
// Output.mu.
type stepper struct {
	t   *testing.T
	k   *core
	fx  *recFx
	o   *Output // parses messages only (parseContract, parseBody)
	now time.Time
}

// newStepper returns a stepper over a core with the configuration yaml
// (the fake's load_urls added) and, with dl, a dead_letter.
func newStepper(t *testing.T, yaml string, dl bool) *stepper {
	t.Helper()
	pc, err := outputSpec().ParseYAML("load_urls: [ http://fake:8030 ]\n"+yaml, nil)
	require.NoError(t, err)
	c, err := configFromParsed(pc)
	require.NoError(t, err)
	fx := newRecFx()
	s := &stepper{t: t, fx: fx, o: &Output{conf: c}, now: time.Unix(1_000_000, 0)}
	s.k = newCore(&s.o.conf, fx, dl)
	s.k.onLifecycleError = func(err error) { t.Errorf("refused: %v", err) }
	return s
}

// advance moves the stepper's clock on by d.
func (s *stepper) advance(d time.Duration) { s.now = s.now.Add(d) }

// parse makes the items of one WriteBatch call, as WriteBatch does before
// it takes the lock.
func (s *stepper) parse(msgs ...*service.Message) (*call, []*item) {
	batch := service.MessageBatch(msgs)
	c := &call{pending: len(batch), done: make(chan struct{})}
	targets := batchTargets{db: batch.InterpolationExecutor(s.o.conf.database), table: batch.InterpolationExecutor(s.o.conf.table)}
	items := make([]*item, len(batch))
	for i := range batch {
		items[i] = s.o.parseContract(batch[i], c, s.now)
		s.o.parseBody(batch, i, items[i], targets)
	}
	return c, items
}

// write is one WriteBatch call that finds buffer space: entered, admitted,
// and left only once the test says (leave). It returns the call.
func (s *stepper) write(msgs ...*service.Message) *call {
	c, items := s.parse(msgs...)
	s.k.callEntered(items, s.now)
	s.k.admit(c, items, s.now)
	s.check()
	return c
}

// check runs the lifecycle invariant check of lifecycle_test.go on the
// core.
func (s *stepper) check() {
	s.t.Helper()
	for _, v := range coreViolations(s.k) {
		s.t.Error(v)
	}
}

// returned reports whether call c returned (its messages are all done).
func returned(c *call) bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// part returns the state of partition p of seq source src.
func (s *stepper) part(src, p string) *partition { return s.k.parts[pkey{source: src, partition: p}] }

// states returns the states of the transactions of partition p of seq
// source src, open one last, as "id:state".
func (s *stepper) states(src, p string) []string {
	pt := s.part(src, p)
	if pt == nil {
		return nil
	}
	var out []string
	txns := pt.order
	if pt.open != nil {
		txns = append(append([]*srcTxn{}, txns...), pt.open)
	}
	for _, t := range txns {
		out = append(out, t.id+":"+t.state.String())
	}
	return out
}

// msgAt stamps a message the way src does but with an explicit seq, so a
// test can deliver a source's messages in any order.
func msgAt(seqSource string, seq int64, p, txn, table string, offset int64, end bool) *service.Message {
	m := service.NewMessage([]byte(fmt.Sprintf(`{"id":%q,"txn":%q}`, fmt.Sprint(seq), txn)))
	contract.Write(m, contract.Meta{
		Partition: p, Database: "test", Table: table, TxnID: txn, TxnEnd: end, Marker: table == "",
		HasSeq: true, Seq: seq, SeqSource: seqSource, HasOffset: true, SourceOffset: offset,
	})
	return m
}
