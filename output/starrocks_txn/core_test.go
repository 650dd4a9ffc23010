package starrocks_txn

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	// resolving are the schema checks started, in order.
	resolving []resolveCall
}

// resolveCall is one resolveSchemas effect.
type resolveCall struct {
	p     *partition
	t     *srcTxn
	needs []schemaNeed
}

func newRecFx() *recFx {
	return &recFx{epochs: map[string]uint64{}, published: map[string][]int64{}, counts: map[string]int64{}, gauges: map[string]int64{}}
}

func (r *recFx) startWorker(q *dbQueue) { r.started = append(r.started, q.db) }

func (r *recFx) wakeWorker(q *dbQueue) { r.woken = append(r.woken, q.db) }

func (r *recFx) readProgress(part string) { r.progressReads = append(r.progressReads, part) }

func (r *recFx) wakeDeadLetter() { r.dlWakes++ }

func (r *recFx) resolveSchemas(p *partition, t *srcTxn, needs []schemaNeed) {
	r.resolving = append(r.resolving, resolveCall{p: p, t: t, needs: needs})
}

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
	pc, err := parseTestYAML("load_urls: [ http://fake:8030 ]\n"+yaml, nil)
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

// commitAll takes what the switches froze for database db into a cycle,
// sends its commit and has it succeed: a database worker's step, its
// commit goroutine's startCommit and the committed resolution, in a row.
func (s *stepper) commitAll(db string) []*srcTxn {
	s.t.Helper()
	q := s.k.dbs[db]
	require.NotNil(s.t, q, "database %s has a queue", db)
	txns := s.k.take(q, nil, false, s.now)
	require.True(s.t, s.k.startCommit(txns))
	s.k.committed(txns)
	s.check()
	return txns
}

// Calls that come out of seq order wait in the sequencer; once the first
// seq comes, every message is applied in seq order, each transaction in
// its partition's order, and the committed-through offset follows it.
func TestCoreAdmitsInSeqOrderAcrossCalls(t *testing.T) {
	st := newStepper(t, "commit_interval: 100ms\n", false)
	s := newSrc("a1")
	var ms []*service.Message
	for i := 1; i <= 4; i++ {
		id := fmt.Sprintf("t%d", i)
		ms = append(ms, s.row("p0", id, "a", map[string]any{"id": i, "txn": id}, true))
	}
	c1 := st.write(ms[3], ms[2])
	c2 := st.write(ms[1])
	assert.Equal(t, 3, pendingSeqs(st.k, "a1"), "seqs 2 to 4 wait for seq 1")
	assert.Nil(t, st.part("a1", "p0"), "nothing is applied out of order")
	c3 := st.write(ms[0])
	// The first END switches the partition; the others come within
	// miniInterval and wait in its active chunks.
	assert.Equal(t, []string{"t1:queued", "t2:active", "t3:active", "t4:active"}, st.states("a1", "p0"))
	assert.Equal(t, []string{"test"}, st.fx.started, "one worker for the database")

	st.advance(100 * time.Millisecond)
	st.k.tick(st.now)
	assert.Equal(t, []string{"t1:queued", "t2:queued", "t3:queued", "t4:queued"}, st.states("a1", "p0"), "the idle switch after miniInterval")
	for _, c := range []*call{c1, c2, c3} {
		assert.False(t, returned(c), "no call returns before its messages commit")
	}
	txns := st.commitAll("test")
	var ids []string
	for _, tx := range txns {
		ids = append(ids, tx.id)
	}
	assert.Equal(t, []string{"t1", "t2", "t3", "t4"}, ids, "the cycle holds them in seq order")
	assert.Equal(t, []*call{c3, c2, c1}, st.fx.done, "each call returns once its last message commits")
	assert.Equal(t, []int64{1, 2, 3, 4}, st.fx.published["p0"], "committed-through moves transaction by transaction")
}

// A gap in the seqs is waited for sequence_gap_timeout, from when the
// first message behind it came, then skipped and reported.
func TestCoreSkipsASequenceGapAfterTheTimeout(t *testing.T) {
	st := newStepper(t, "commit_interval: 100ms\nsequence_gap_timeout: 300ms\n", false)
	s := newSrc("a1")
	m1 := s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, true)
	_ = s.row("p0", "lost", "a", map[string]any{"id": 2, "txn": "lost"}, true) // dropped upstream
	m3 := s.row("p0", "t3", "a", map[string]any{"id": 3, "txn": "t3"}, true)
	st.write(m3)
	st.write(m1)
	assert.Equal(t, []string{"t1:queued"}, st.states("a1", "p0"), "seq 1 is applied, seq 3 waits for seq 2")
	st.k.tick(st.now.Add(300*time.Millisecond - time.Nanosecond))
	assert.Equal(t, 1, pendingSeqs(st.k, "a1"), "waited for, up to sequence_gap_timeout")
	st.k.tick(st.now.Add(300 * time.Millisecond))
	assert.Zero(t, pendingSeqs(st.k, "a1"))
	assert.Equal(t, []string{"t1:queued", "t3:queued"}, st.states("a1", "p0"), "the gap is skipped")
	assert.Equal(t, int64(1), st.fx.counts[fmt.Sprintf("%d/", ctrSeqGaps)])
	assert.Len(t, st.fx.logged(logError, "starrocks_seq 2 to 2", "sequence_gap_timeout"), 1)
}

// The seqs of a call that has not been admitted yet (parsing its bodies,
// or waiting for buffer space) are held: however long it takes, the gap
// they leave is not skipped, and the call's messages are applied in order
// once it is admitted.
func TestCoreHeldSeqsAreNeverAGap(t *testing.T) {
	st := newStepper(t, "commit_interval: 100ms\nsequence_gap_timeout: 200ms\n", false)
	s := newSrc("asm")
	head := s.row("p1", "T", "a", map[string]any{"id": 1, "txn": "T"}, false)
	tail := s.row("p1", "T", "a", map[string]any{"id": 2, "txn": "T"}, true)
	hc, hitems := st.parse(head)
	st.k.callEntered(hitems, st.now)
	st.write(tail)
	st.k.tick(st.now.Add(time.Hour))
	assert.Equal(t, 1, pendingSeqs(st.k, "asm"), "the tail still waits for the held head")
	assert.Nil(t, st.part("asm", "p1"))
	assert.Zero(t, st.fx.counts[fmt.Sprintf("%d/", ctrSeqGaps)], "no gap counted")
	st.advance(time.Hour)
	st.k.admit(hc, hitems, st.now)
	st.check()
	assert.Equal(t, []string{"T:queued"}, st.states("asm", "p1"), "head and tail in one transaction")
	assert.Len(t, st.part("asm", "p1").order[0].items, 2)
}

// The hard cap: at twice buffer_size admission waits while something
// buffered is committable; with only open transactions buffered it goes
// on, with an error naming buffer_size at most every reportEvery.
func TestCoreHardCapWaitsOnlyForWhatCanCommit(t *testing.T) {
	st := newStepper(t, "commit_interval: 100ms\nbuffer_size: 100\n", false)
	s := newSrc("a1")
	pad := strings.Repeat("x", 70)
	st.write(
		s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1", "pad": pad}, true),
		s.row("p0", "t2", "a", map[string]any{"id": 2, "txn": "t2", "pad": pad}, true),
		s.row("p0", "t3", "a", map[string]any{"id": 3, "txn": "t3", "pad": pad}, true),
	)
	require.GreaterOrEqual(t, st.k.buffered, int64(200))
	assert.True(t, st.k.full(st.now), "over twice buffer_size and committable: admission waits")
	st.k.tick(st.now.Add(time.Second))
	st.commitAll("test")
	assert.False(t, st.k.full(st.now), "committed: room again")

	st.write(s.row("p1", "big", "a", map[string]any{"id": 4, "txn": "big", "pad": pad + pad + pad}, false))
	require.GreaterOrEqual(t, st.k.buffered, int64(200))
	assert.Zero(t, st.k.committable)
	assert.False(t, st.k.full(st.now), "only an open transaction: waiting could never end")
	assert.False(t, st.k.full(st.now.Add(reportEvery-time.Nanosecond)))
	assert.Len(t, st.fx.logged(logError, "buffer_size"), 1, "reported once per reportEvery")
	assert.False(t, st.k.full(st.now.Add(reportEvery)))
	assert.Len(t, st.fx.logged(logError, "buffer_size"), 2)
}

// The soft cap: once buffer_size is buffered, every database worker is
// woken to commit now, and its next step sees it urgent, once.
func TestCoreSoftCapMakesEveryWorkerUrgent(t *testing.T) {
	st := newStepper(t, "commit_interval: 100ms\nbuffer_size: 100\n", false)
	s := newSrc("a1")
	st.write(s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, true))
	q := st.k.dbs["test"]
	require.NotNil(t, q)
	_, _, urgent, _ := st.k.stepState(q, st.now, time.Minute)
	assert.False(t, urgent, "under buffer_size")
	woken := len(st.fx.woken)
	st.write(s.row("p0", "t2", "a", map[string]any{"id": 2, "txn": "t2", "pad": strings.Repeat("x", 120)}, false))
	assert.Greater(t, len(st.fx.woken), woken, "the worker is woken")
	assert.True(t, q.urgent)
	hasWork, recent, urgent, refused := st.k.stepState(q, st.now, time.Minute)
	assert.True(t, hasWork)
	assert.True(t, recent)
	assert.True(t, urgent)
	assert.False(t, refused)
	assert.False(t, q.urgent, "the request is taken by the step")
}

// Every max_in_flight slot held on open transactions is reported once the
// state lasted starveHold, not at its first sight; a call that returns
// ends it.
func TestCoreReportsStarvationAfterTheHold(t *testing.T) {
	st := newStepper(t, "commit_interval: 100ms\nmax_in_flight: 2\n", false)
	s := newSrc("a1")
	c1 := st.write(s.row("p0", "open", "a", map[string]any{"id": 1}, false))
	st.write(s.row("p0", "open", "a", map[string]any{"id": 2}, false))
	hold := st.k.starveHold()
	st.k.checkInFlight(st.now)
	st.k.checkInFlight(st.now.Add(hold - time.Nanosecond))
	assert.Zero(t, st.fx.counts[fmt.Sprintf("%d/", ctrMaxInFlightStarved)], "not yet: a passing state is not starvation")
	st.k.checkInFlight(st.now.Add(hold))
	assert.Equal(t, int64(1), st.fx.counts[fmt.Sprintf("%d/", ctrMaxInFlightStarved)])
	assert.Len(t, st.fx.logged(logError, "max_in_flight (2)"), 1)

	st.k.callLeft(c1)
	st.k.checkInFlight(st.now.Add(2 * hold))
	assert.True(t, st.k.starvedSince.IsZero(), "a slot is free")
}

// A switch freezes every region of a partition at once, at an END: the
// first END does, an END within miniInterval of it waits in the active
// chunks until the manager's idle switch, and an open transaction is never
// frozen.
func TestCoreSwitchFreezesWholeTransactions(t *testing.T) {
	st := newStepper(t, "commit_interval: 100ms\n", false)
	s := newSrc("a1")
	st.write(txnMsgs(s, "p0", "t1", 1)...)
	st.advance(50 * time.Millisecond)
	st.write(txnMsgs(s, "p0", "t2", 2)...)
	st.write(s.row("p0", "t3", "a", map[string]any{"id": "t3", "txn": "t3"}, false))
	q := st.k.dbs["test"]
	require.Len(t, q.queue, 1)
	assert.Equal(t, []string{"a", "b"}, q.queue[0].tables, "t1's rows of both tables froze together")
	assert.Equal(t, []string{"t1:queued", "t2:active", "t3:open"}, st.states("a1", "p0"))
	st.k.tick(st.now.Add(50*time.Millisecond - time.Nanosecond))
	assert.Equal(t, []string{"t1:queued", "t2:active", "t3:open"}, st.states("a1", "p0"), "within miniInterval of the last switch")
	st.k.tick(st.now.Add(50 * time.Millisecond))
	assert.Equal(t, []string{"t1:queued", "t2:queued", "t3:open"}, st.states("a1", "p0"))
}

// Committed-through moves over the resolved prefix only: a later
// transaction of the partition committed in another database first
// publishes nothing until the earlier one is resolved too.
func TestCoreCommittedThroughFollowsTheResolvedPrefix(t *testing.T) {
	st := newStepper(t, "commit_interval: 100ms\n", false)
	s := newSrc("a1")
	m1 := s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, true)
	m1.MetaSetMut("starrocks_database", "x")
	m2 := s.row("p0", "t2", "a", map[string]any{"id": 2, "txn": "t2"}, true)
	m2.MetaSetMut("starrocks_database", "y")
	st.write(m1, m2)
	st.k.tick(st.now.Add(time.Second))
	st.commitAll("y")
	assert.Empty(t, st.fx.published["p0"], "t1 is not resolved yet")
	st.commitAll("x")
	assert.Equal(t, []int64{2}, st.fx.published["p0"], "both resolved: through t2's END")
}

// A fence takes the partition's transactions at once but waits for a
// commit in flight that holds one of them; the commit's outcome still
// applies and is published, an open transaction is released unpublished,
// and nothing is published once the fence ended.
func TestCoreFenceWaitsForTheCommitInFlight(t *testing.T) {
	st := newStepper(t, "commit_interval: 100ms\n", false)
	s := newSrc("a1")
	c1 := st.write(txnMsgs(s, "p0", "t1", 1)...)
	c2 := st.write(s.row("p0", "t2", "a", map[string]any{"id": "t2", "txn": "t2"}, false))
	q := st.k.dbs["test"]
	txns := st.k.take(q, nil, false, st.now)
	require.True(t, st.k.startCommit(txns))

	f := st.k.fenceTake("p0")
	st.check()
	assert.Nil(t, st.part("a1", "p0"), "the partition state is gone")
	assert.Zero(t, st.k.buffered, "fenced transactions are not buffered")
	assert.False(t, st.k.fenceRelease(f), "the commit in flight holds t1")
	assert.False(t, returned(c2), "nothing is released while the fence waits")

	st.k.committed(txns)
	st.check()
	assert.True(t, returned(c1), "t1 committed although fenced meanwhile")
	assert.Equal(t, []int64{2}, st.fx.published["p0"], "its boundary is published: the fence is not over")
	assert.True(t, st.k.fenceRelease(f))
	assert.True(t, returned(c2), "the open transaction is released")
	st.k.fenceEnd(f)
	assert.True(t, f.parts[0].fenced)
	assert.Equal(t, []int64{2}, st.fx.published["p0"], "nothing published for the released transaction")
}

// A message of an assignment that is over is acknowledged unapplied and
// never recreates its partition.
func TestCoreStaleEpochIsReleasedUnapplied(t *testing.T) {
	st := newStepper(t, "commit_interval: 100ms\n", false)
	st.fx.epochs["p0"] = 2
	s := newSrc("a1")
	c := st.write(withEpoch(1, s.row("p0", "t1", "a", map[string]any{"id": 1, "txn": "t1"}, true))...)
	assert.True(t, returned(c))
	assert.Nil(t, st.part("a1", "p0"))
	assert.Equal(t, int64(1), st.fx.counts[fmt.Sprintf("%d/p0", ctrStaleEpoch)])
	c = st.write(withEpoch(2, s.row("p0", "t2", "a", map[string]any{"id": 2, "txn": "t2"}, true))...)
	assert.False(t, returned(c))
	assert.Equal(t, []string{"t2:queued"}, st.states("a1", "p0"), "the current assignment's message is applied")
}

// A message with a malformed starrocks_seq waits, parked, for its
// transaction to open; one whose transaction does not open within
// sequence_gap_timeout is poisoned alone and goes to dead_letter.
func TestCoreParkedMessageIsPoisonedAfterTheGapTimeout(t *testing.T) {
	st := newStepper(t, "commit_interval: 100ms\nsequence_gap_timeout: 200ms\n", true)
	s := newSrc("a1")
	stray := s.row("p0", "gone", "a", map[string]any{"id": 1, "txn": "gone"}, false)
	stray.MetaSetMut("starrocks_seq", "?")
	c := st.write(stray)
	require.Len(t, st.part("a1", "p0").parked["gone"], 1)
	st.k.tick(st.now.Add(200*time.Millisecond - time.Nanosecond))
	assert.Len(t, st.part("a1", "p0").parked["gone"], 1, "waited for up to sequence_gap_timeout")
	st.k.tick(st.now.Add(200 * time.Millisecond))
	assert.Empty(t, st.part("a1", "p0").parked)
	assert.Equal(t, []string{"gone:poisoned"}, st.states("a1", "p0"))
	assert.Equal(t, 1, st.fx.dlWakes, "the dead-letter loop is woken")
	tx := st.k.nextDeadLetter()
	require.NotNil(t, tx)
	assert.Contains(t, tx.poison.Error(), "did not open within sequence_gap_timeout")
	st.k.deadLetterEnded(tx, true)
	st.check()
	assert.True(t, returned(c), "acknowledged once in dead_letter")
	assert.Empty(t, st.fx.published["p0"], "it has no END: no boundary to commit at")
}

// Without dead_letter a poisoned transaction stalls its partition: it and
// every later message of the partition are held, the stall is reported,
// and a fence releases them all.
func TestCoreStallHoldsThePartitionUntilAFence(t *testing.T) {
	st := newStepper(t, "commit_interval: 100ms\n", false)
	s := newSrc("a1")
	bad := txnMsgs(s, "p0", "bad", 1)
	bad[0].SetError(fmt.Errorf("a processor failed"))
	c1 := st.write(bad...)
	c2 := st.write(txnMsgs(s, "p0", "later", 2)...)
	c3 := st.write(txnMsgs(s, "p1", "other", 3)...)
	assert.Equal(t, "bad", stalledAt(st.k, "a1", "p0"))
	assert.Len(t, st.part("a1", "p0").held, 2, "later messages are held, unapplied")
	assert.Equal(t, int64(1), st.fx.gauges[fmt.Sprintf("%d/p0", gaugeStalledPartition)])
	assert.Equal(t, int64(1), st.fx.counts[fmt.Sprintf("%d/", ctrPartitionStalls)])
	assert.Equal(t, []string{"other:queued"}, st.states("a1", "p1"), "other partitions go on")

	f := st.k.fenceTake("p0")
	require.True(t, st.k.fenceRelease(f))
	st.k.fenceEnd(f)
	st.check()
	assert.True(t, returned(c1))
	assert.True(t, returned(c2))
	assert.False(t, returned(c3))
	assert.Equal(t, int64(0), st.fx.gauges[fmt.Sprintf("%d/p0", gaugeStalledPartition)])
	assert.Empty(t, st.fx.published["p0"], "nothing of it is published")
}

// A stall that comes while a later transaction of the partition is open
// (a load StarRocks refused for the rows of an earlier one, found in its
// cycle) keeps that transaction whole and open: the rest of it is held
// behind the stall, and a fence takes and releases all of it — no call
// waits for good.
func TestCoreStallWithAnOpenTransactionReleasesItAtAFence(t *testing.T) {
	st := newStepper(t, "commit_interval: 100ms\n", false)
	s := newSrc("a1")
	c1 := st.write(txnMsgs(s, "p0", "t1", 1)...)
	txns := st.k.take(st.k.dbs["test"], nil, false, st.now)
	require.Len(t, txns, 1)
	t2 := txnMsgs(s, "p0", "t2", 2)
	c2 := st.write(t2[0])
	assert.Equal(t, []string{"t1:in cycle", "t2:open"}, st.states("a1", "p0"))

	st.k.poisonLive(txns[0], fmt.Errorf("a row StarRocks cannot take"))
	st.check()
	assert.Equal(t, "t1", stalledAt(st.k, "a1", "p0"))
	assert.Equal(t, []string{"t1:stalled", "t2:open"}, st.states("a1", "p0"), "t2 is still the partition's open transaction")
	c3 := st.write(t2[1])
	assert.Len(t, st.part("a1", "p0").held, 1, "the rest of t2 is held behind the stall")
	assert.Contains(t, st.k.waitedFor(st.part("a1", "p0").open.items), `stalled at poisoned source transaction "t1"`, "a call of t2 waits on the stall, not on t2's END")

	f := st.k.fenceTake("p0")
	require.True(t, st.k.fenceRelease(f))
	st.k.fenceEnd(f)
	st.check()
	for i, c := range []*call{c1, c2, c3} {
		assert.True(t, returned(c), "call %d released by the fence", i+1)
	}
	assert.Empty(t, st.fx.published["p0"], "nothing of it is published")
}

// exactly_once: a partition's messages wait for its progress; once it is
// read, what StarRocks holds is acknowledged without being loaded and its
// END published, and the rest is applied in order. A read that a fence
// outdated is read again.
func TestCoreProgressReadDropsWhatStarRocksHolds(t *testing.T) {
	st := newStepper(t, "commit_interval: 100ms\n", false)
	st.k.learns = true
	s := newSrc("a1")
	c1 := st.write(txnMsgs(s, "p0", "t1", 1)...) // offsets 1-2
	c2 := st.write(txnMsgs(s, "p0", "t2", 2)...) // offsets 3-4
	assert.Equal(t, []string{"p0"}, st.fx.progressReads, "one read for the partition")
	assert.Len(t, st.k.progressWait["p0"], 4)
	assert.Nil(t, st.part("a1", "p0"))

	held := progressEntry{through: 2, hasThrough: true}
	gen := st.k.progressGen["p0"]
	st.k.progressGen["p0"]++ // a fence came while it read
	assert.False(t, st.k.progressRead("p0", gen, held, st.now), "outdated: read again")
	assert.True(t, st.k.progressRead("p0", gen+1, held, st.now))
	st.check()
	assert.True(t, returned(c1), "StarRocks holds t1: acknowledged, not loaded")
	assert.Equal(t, []int64{2}, st.fx.published["p0"])
	assert.False(t, returned(c2))
	assert.Equal(t, []string{"t2:queued"}, st.states("a1", "p0"))
	assert.Equal(t, int64(2), st.fx.counts[fmt.Sprintf("%d/p0", ctrReplaysDropped)])
}

// A fence that released every message waiting for a partition's progress
// ends the wish to read it: a reader that begins only then (its goroutine
// started late on a loaded machine, or it retries after an error) stops
// instead of keeping a value read before the partition's next owner commits
// (which this output would take for the truth when the partition comes
// back, and apply that owner's source transactions again). The next message
// starts a read of its own.
func TestCoreReadBegunAfterAFenceReleasedItsWaitersStops(t *testing.T) {
	st := newStepper(t, "commit_interval: 100ms\n", false)
	st.k.learns = true
	s := newSrc("a1")
	c1 := st.write(txnMsgs(s, "p0", "t1", 1)...)
	assert.Equal(t, []string{"p0"}, st.fx.progressReads, "one read for the partition")
	assert.True(t, st.k.progressWanted("p0"), "messages wait for it")

	f := st.k.fenceTake("p0")
	require.True(t, st.k.fenceRelease(f))
	st.k.fenceEnd(f)
	st.check()
	assert.True(t, returned(c1), "released by the fence")

	// The reader's first step only now: nothing waits, so it stops.
	assert.False(t, st.k.progressWanted("p0"))
	assert.False(t, st.k.progressLoading["p0"], "the reading stopped")
	assert.Nil(t, st.k.progress["p0"], "nothing read, nothing kept")

	// The partition comes back: its next message starts a new read.
	st.write(txnMsgs(s, "p0", "t2", 2)...)
	assert.Equal(t, []string{"p0", "p0"}, st.fx.progressReads, "a read of its own")
	assert.True(t, st.k.progressWanted("p0"))
}
