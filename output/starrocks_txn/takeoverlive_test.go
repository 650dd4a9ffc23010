package starrocks_txn

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// rollbackRecorder is the fake server as one output sees it, recording the
// rollbacks that output sends that abort a transaction.
type rollbackRecorder struct {
	*fakeSR
	mu      sync.Mutex
	aborted []string
}

func (r *rollbackRecorder) Rollback(ctx context.Context, t starrocks.Txn) error {
	err := r.fakeSR.Rollback(ctx, t)
	if err == nil {
		r.mu.Lock()
		r.aborted = append(r.aborted, t.Label)
		r.mu.Unlock()
	}
	return err
}

func (r *rollbackRecorder) abortedWith(prefix string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, l := range r.aborted {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

// Two members of one pipeline: A loads its partition without a pause while
// B takes a partition. B's take-over leaves A's transactions alone — A's row
// changes, so A made its commits visible itself — and A never replays a
// cycle for it. (Before: B rolled back A's open transaction, and A's next
// load or commit failed and replayed its cycle.)
func TestTakeOverLeavesALiveWritersTransactionsAlone(t *testing.T) {
	f := newFakeSR()
	a, _, _ := eoOutput(t, f, nil, "")
	rec := &rollbackRecorder{fakeSR: f}
	sa := newSrc("asm-a")
	waitAll(t, []chan error{writeAsync(a, service.MessageBatch(txnMsgs(sa, "p0", "a0", 0)))}, 5*time.Second)

	// A's traffic: a source transaction every 10 ms until B has started.
	stop := make(chan struct{})
	var fed sync.WaitGroup
	var aChs []chan error
	fed.Add(1)
	go func() {
		defer fed.Done()
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			aChs = append(aChs, writeAsync(a, service.MessageBatch(txnMsgs(sa, "p0", fmt.Sprintf("a%d", i), i))))
		}
	}()
	// Let A have an open cycle with rows loaded, and an eager next one.
	require.Eventually(t, func() bool { return f.commitCount() >= 4 }, 5*time.Second, 5*time.Millisecond)

	b, _, _ := eoOutput(t, f, nil, "", withClient(rec))
	sb := newSrc("asm-b")
	waitAll(t, []chan error{writeAsync(b, service.MessageBatch(txnMsgs(sb, "p1", "b0", 0)))}, 10*time.Second)
	close(stop)
	fed.Wait()
	waitAll(t, aChs, 10*time.Second)
	b.mu.Lock()
	_, ok := b.core.progress["p1"]
	b.mu.Unlock()
	require.True(t, ok, "B read p1's progress")

	stemA := starrocks.SeqLabel(a.conf.labelPrefix, "test", a.writer, 1)
	stemA = stemA[:len(stemA)-8]
	assert.Empty(t, rec.abortedWith(stemA), "B rolled back none of A's transactions")
	assert.EqualValues(t, 1, takeOverOf(t, b).markers.Load(), "B committed one marker before it read the rows")
	assert.Empty(t, abortedOf(f, stemA), "no transaction of A was aborted: A replayed no cycle")
}

// abortedOf returns the labels of the fake's transactions that start with
// prefix and were aborted.
func abortedOf(f *fakeSR, prefix string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for l, ft := range f.txns {
		if strings.HasPrefix(l, prefix) && ft.state == starrocks.StateAborted {
			out = append(out, l)
		}
	}
	return out
}

// zombieSR is the fake server with a writer that is gone from the group but
// whose last commit, sent before, the FE publishes only at landAt: until
// then its label is PREPARE and a rollback is refused (the FE is committing
// it); then it is VISIBLE. Its other labels were never begun. This output's
// own transactions (the markers) go to the fake.
type zombieSR struct {
	*fakeSR
	stem   string
	late   int64
	landAt time.Time
	mu     sync.Mutex
	polled int
}

func (z *zombieSR) landed() bool { return !time.Now().Before(z.landAt) }

func (z *zombieSR) WaitFinal(ctx context.Context, db, label string, maxWait time.Duration) (starrocks.LabelState, error) {
	if !strings.HasPrefix(label, z.stem) {
		return z.fakeSR.WaitFinal(ctx, db, label, maxWait)
	}
	if label != starrocks.StemLabel(z.stem, z.late) {
		return starrocks.StateUnknown, nil
	}
	z.mu.Lock()
	z.polled++
	z.mu.Unlock()
	if z.landed() {
		return starrocks.StateVisible, nil
	}
	return starrocks.StatePrepare, nil
}

func (z *zombieSR) Rollback(ctx context.Context, t starrocks.Txn) error {
	switch {
	case !strings.HasPrefix(t.Label, z.stem):
		return z.fakeSR.Rollback(ctx, t)
	case t.Label != starrocks.StemLabel(z.stem, z.late):
		return srErr("rollback", starrocks.ClassPerTxn, "stream load task"+t.Label+"does not exist")
	case z.landed():
		return srErr("rollback", starrocks.ClassTransient, "Can not abort VISIBLE transaction 7, label is "+t.Label)
	}
	return srErr("rollback", starrocks.ClassTransient, "Can not abort transaction 7 during committing, label is "+t.Label)
}

// zombieRows is the writers table as the zombie's commits leave it: before
// (the row before its late label) until the late label lands, then the row
// that label carried; and, when behind is set, only behind until this
// output committed a marker (a row committed, not yet published, that every
// later commit of the table publishes first).
type zombieRows struct {
	fakeProgress
	z              *zombieSR
	db             string
	behind, before writerRow
	after          writerRow
	reads          atomic.Int64
}

func (s *zombieRows) current() writerRow {
	switch {
	case s.z.landed():
		return s.after
	case s.behind.label != "" && !s.marked():
		return s.behind
	}
	return s.before
}

// marked reports whether a marker of this output is committed.
func (s *zombieRows) marked() bool {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	for _, c := range s.f.commits {
		for _, r := range c.rows[writersTable(defaultProgressTable)] {
			if r["writer"] == "" && r["__op"] == float64(1) {
				return true
			}
		}
	}
	return false
}

func (s *zombieRows) writers(context.Context, string) (map[string][]writerRow, error) {
	s.reads.Add(1)
	return map[string][]writerRow{s.db: {s.current()}}, nil
}

func (s *zombieRows) writerRow(_ context.Context, db, _, writer string) (writerRow, bool, error) {
	r := s.current()
	return r, db == s.db && writer == r.writer, nil
}

// A writer that looks live — its row was written a moment ago — but whose
// last commit the FE publishes only later (a zombie whose lease ended, or a
// killed process): the take-over returns only once that commit is visible,
// whether it lands while the row is watched (the row changes then) or after
// the watch gave up (the label is then waited for). A take-over that took a
// fresh row for a live writer and left it alone would return before.
func TestTakeOverWaitsForTheLateCommitOfAWriterThatLooksLive(t *testing.T) {
	for _, tc := range []struct {
		name string
		land time.Duration
	}{{"lands while watched", 300 * time.Millisecond}, {"lands after the watch", 900 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			stem := "benthos-shop-0a0b0c0d"
			z := &zombieSR{fakeSR: newFakeSR(), stem: stem, late: 11}
			k := probeOutput(t, &scriptedSR{fakeSR: z.fakeSR}, withClient(z))
			k.liveWait = 500 * time.Millisecond
			now := time.Now()
			rows := &zombieRows{fakeProgress: fakeProgress{f: z.fakeSR, table: defaultProgressTable}, z: z, db: "shop",
				before: writerRow{writer: "0a0b0c0d", top: 10, label: starrocks.StemLabel(stem, 10), updated: now},
				after:  writerRow{writer: "0a0b0c0d", top: 11, label: starrocks.StemLabel(stem, 11), updated: now}}
			k.store = rows
			z.landAt = now.Add(tc.land)
			require.NoError(t, k.run(context.Background(), k.ticket()))
			assert.True(t, z.landed(), "returned only once the late commit was visible")
			assert.EqualValues(t, 1, k.markers.Load())
		})
	}
}

// The marker is what makes one reading of the rows enough: the row a writer
// held when it sent its last commit may be committed and not yet published
// when the take-over starts (an anchor far above the row StarRocks shows,
// whose cycle is being committed). Read after the marker, that row is
// there and the cycle is waited for; read once before, the cycle's label is
// outside every label the older row names.
func TestTakeOverReadsTheRowsAgainAfterItsMarker(t *testing.T) {
	stem := "benthos-shop-0e0e0e0e"
	late := int64(5 + anchorGap + 9)
	z := &zombieSR{fakeSR: newFakeSR(), stem: stem, late: late}
	k := probeOutput(t, &scriptedSR{fakeSR: z.fakeSR}, withClient(z))
	k.liveWait = 200 * time.Millisecond
	past := time.Now().Add(-time.Minute)
	anchor := late + 1
	rows := &zombieRows{fakeProgress: fakeProgress{f: z.fakeSR, table: defaultProgressTable}, z: z, db: "shop",
		behind: writerRow{writer: "0e0e0e0e", top: 5, label: starrocks.StemLabel(stem, 5), updated: past},
		before: writerRow{writer: "0e0e0e0e", top: anchor, open: []int64{late}, label: starrocks.StemLabel(stem, anchor), updated: past},
		after:  writerRow{writer: "0e0e0e0e", top: anchor, label: starrocks.StemLabel(stem, late), updated: time.Now()}}
	k.store = rows
	z.landAt = time.Now().Add(600 * time.Millisecond)
	require.NoError(t, k.run(context.Background(), k.ticket()))
	assert.True(t, z.landed(), "the cycle the newer row lists was waited for")
	z.mu.Lock()
	assert.NotZero(t, z.polled, "its label was asked")
	z.mu.Unlock()
	assert.EqualValues(t, 2, rows.reads.Load(), "the rows were read before and after the marker, not again")
}

// A writer whose row looks live but does not change within liveWait (dead
// a moment after its last commit, or idle) has its open transactions
// rolled back once the watch is over, not before.
func TestTakeOverFinalizesAWriterWhoseRowStandsStill(t *testing.T) {
	stem := "benthos-shop-0f0f0f0f"
	l := func(n int64) string { return starrocks.StemLabel(stem, n) }
	sr := &scriptedSR{fakeSR: newFakeSR(), states: map[string][]starrocks.LabelState{
		l(12): {starrocks.StatePrepare},
	}, committing: map[string]bool{}}
	k := probeOutput(t, sr)
	k.liveWait = 300 * time.Millisecond
	k.store = &staticWriters{fakeProgress: fakeProgress{f: sr.fakeSR, table: defaultProgressTable}, rows: map[string][]writerRow{"shop": {
		{writer: "0f0f0f0f", top: 10, open: []int64{12}, label: l(10), updated: time.Now()},
	}}}
	start := time.Now()
	require.NoError(t, k.run(context.Background(), k.ticket()))
	assert.GreaterOrEqual(t, time.Since(start), 250*time.Millisecond, "watched first (the row's time is kept to the second)")
	assert.Equal(t, []string{l(12)}, sr.rolledBack)
}

// slowPublishSR is the fake server where a commit that carries no data
// rows (an anchor) is COMMITTED for a few label-state queries before it is
// VISIBLE, as an FE whose publish lags answers; it records the order of
// "anchor visible" and "data commit sent".
type slowPublishSR struct {
	*fakeSR
	mu      sync.Mutex
	pending map[string]int
	events  []string
}

func (s *slowPublishSR) Commit(ctx context.Context, t starrocks.Txn) error {
	s.fakeSR.mu.Lock()
	_, data := s.fakeSR.txns[t.Label].pending["a"]
	s.fakeSR.mu.Unlock()
	s.mu.Lock()
	if data {
		s.events = append(s.events, "data commit "+t.Label)
	}
	s.mu.Unlock()
	err := s.fakeSR.Commit(ctx, t)
	if err == nil && !data {
		s.mu.Lock()
		s.pending[t.Label] = 3
		s.mu.Unlock()
	}
	return err
}

func (s *slowPublishSR) WaitFinal(ctx context.Context, db, label string, maxWait time.Duration) (starrocks.LabelState, error) {
	s.mu.Lock()
	n, anchor := s.pending[label]
	switch {
	case anchor && n > 0:
		s.pending[label] = n - 1
		s.mu.Unlock()
		return starrocks.StateCommitted, nil
	case anchor:
		delete(s.pending, label)
		s.events = append(s.events, "anchor visible "+label)
	}
	s.mu.Unlock()
	return s.fakeSR.WaitFinal(ctx, db, label, maxWait)
}

// A writer's first commit in a database is an anchor (its row alone); the
// commit it is for is sent only once the anchor is VISIBLE, not merely
// COMMITTED: a take-over that finds no row of a writer in a database checks
// none of its labels there (runMarked).
func TestAnchorIsVisibleBeforeTheCommitItCovers(t *testing.T) {
	f := newFakeSR()
	sp := &slowPublishSR{fakeSR: f, pending: map[string]int{}}
	o, _, _ := eoOutput(t, f, nil, "retry_backoff: { initial_interval: 1ms, max_interval: 5ms }\n", withClient(sp))
	s := newSrc("asm")
	waitAll(t, []chan error{writeAsync(o, service.MessageBatch(txnMsgs(s, "p0", "t0", 0)))}, 5*time.Second)
	sp.mu.Lock()
	defer sp.mu.Unlock()
	require.Len(t, sp.events, 2, "%v", sp.events)
	assert.True(t, strings.HasPrefix(sp.events[0], "anchor visible"), "%v", sp.events)
	assert.True(t, strings.HasPrefix(sp.events[1], "data commit"), "%v", sp.events)
}

// The same against the emulator, two exactly_once outputs of one pipeline:
// A loads order_events without a pause while B takes a partition; no
// transaction of either is aborted (before, B rolled back A's open one),
// and every event is there once.
func TestIntegrationTakeOverLeavesALiveWritersTransactionsAlone(t *testing.T) {
	e := startEmulator(t)
	a, _ := emulatorEOOutput(t, e, "")
	sa := newSrc("asm-a")
	event := func(s *src, p string, id int) service.MessageBatch {
		return service.MessageBatch{s.row(p, fmt.Sprintf("%s-%d", p, id), "order_events", map[string]any{"event_id": id, "order_id": id, "kind": "k"}, true)}
	}
	waitAll(t, []chan error{writeAsync(a, event(sa, "orders/0", 1))}, 10*time.Second)

	stop := make(chan struct{})
	var fed sync.WaitGroup
	var aChs []chan error
	n := 1
	fed.Add(1)
	go func() {
		defer fed.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			n++
			aChs = append(aChs, writeAsync(a, event(sa, "orders/0", n)))
		}
	}()
	require.Eventually(t, func() bool { return e.Counters().Commits >= 4 }, 10*time.Second, 5*time.Millisecond)

	b, _ := emulatorEOOutput(t, e, "")
	sb := newSrc("asm-b")
	waitAll(t, []chan error{writeAsync(b, event(sb, "orders/1", 100000))}, 20*time.Second)
	close(stop)
	fed.Wait()
	waitAll(t, aChs, 20*time.Second)

	assert.Zero(t, e.Counters().Aborted, "no transaction was aborted: B rolled back none of A's, and A replayed nothing")
	assert.EqualValues(t, 1, takeOverOf(t, b).markers.Load(), "B committed one marker")
	rows, err := e.Store().Rows("test", "order_events")
	require.NoError(t, err)
	assert.Len(t, rows, n+1, "every event once")
}

// The marker's requests under every outcome of a remote call (ARCHITECTURE.md
// §12): refused, reset before it runs, applied with the reply lost, the
// reply late (within and past request_timeout), slow, and the commit's own
// (reported failure, late visibility, a true abort). Writer A has a row and
// an open transaction and stands still; B's take-over gets a marker
// visible in the end, rolls A's transaction back, and applies its own
// partition's event exactly once — never a stall.
func TestIntegrationTakeOverMarkerUnderEveryOutcome(t *testing.T) {
	type outcome struct {
		action emulator.Action
		delay  time.Duration
	}
	common := []outcome{{emulator.ActInternalError, 0}, {emulator.ActHTTPError, 0}, {emulator.ActReset, 0},
		{emulator.ActReplyLost, 0}, {emulator.ActReplyLate, time.Second}, {emulator.ActReplyLate, 3 * time.Second},
		{emulator.ActDelay, time.Second}}
	cases := map[emulator.Op][]outcome{
		emulator.OpBegin: common, emulator.OpLoad: common, emulator.OpGetLoadState: common,
		emulator.OpCommit: append(append([]outcome{}, common...), outcome{emulator.ActCommitReportFailure, 0},
			outcome{emulator.ActCommitLate, 1500 * time.Millisecond}, outcome{emulator.ActCommitAbort, 0},
			outcome{emulator.ActNoAnswer, 0}),
	}
	for _, op := range []emulator.Op{emulator.OpBegin, emulator.OpLoad, emulator.OpCommit, emulator.OpGetLoadState} {
		for _, oc := range cases[op] {
			t.Run(fmt.Sprintf("%s/%s/%v", op, oc.action, oc.delay), func(t *testing.T) {
				t.Parallel()
				e := startEmulator(t)
				a, _ := emulatorEOOutput(t, e, "")
				sa := newSrc("asm-a")
				event := func(s *src, p string, id int) service.MessageBatch {
					return service.MessageBatch{s.row(p, fmt.Sprintf("%s-%d", p, id), "order_events", map[string]any{"event_id": id, "order_id": id, "kind": "k"}, true)}
				}
				waitAll(t, []chan error{writeAsync(a, event(sa, "orders/0", 1))}, 10*time.Second)
				// A begins its next transaction after the commit (eagerly);
				// B starts once it has, so that there is one to roll back
				// (on a loaded machine B's take-over could come first).
				require.Eventually(t, func() bool {
					c := e.Counters()
					return c.Begins > c.Committed+c.Aborted
				}, 30*time.Second, 5*time.Millisecond, "A holds an open transaction")
				abortedBefore := e.Counters().Aborted

				b, _ := emulatorEOOutput(t, e, "")
				takeOverOf(t, b).liveWait = 100 * time.Millisecond
				require.NoError(t, e.Faults().Add(emulator.Fault{Op: op, Action: oc.action, Delay: oc.delay, Label: "-takeover-"}))
				sb := newSrc("asm-b")
				waitAll(t, []chan error{writeAsync(b, event(sb, "orders/1", 2))}, 60*time.Second)
				assert.Empty(t, e.Faults().Pending(), "the fault fired")
				assert.GreaterOrEqual(t, takeOverOf(t, b).markers.Load(), int64(1), "a marker became visible")
				assert.Greater(t, e.Counters().Aborted, abortedBefore, "A's open transaction was rolled back: its row stood still")
				rows, err := e.Store().Rows("test", "order_events")
				require.NoError(t, err)
				assert.Len(t, rows, 2, "each event once")
			})
		}
	}
}

// markerLagSR is the scripted server where the take-over marker, once
// VISIBLE, is answered COMMITTED for at least lsw after its first answer
// and until the client reported the lag (reported), or giveUp passed: a
// publish that lags past label_state_wait. Publishing on the client's
// report, not on the server's own clock, keeps the test independent of how
// long the client took to receive the first answer (its lag is timed from
// there).
type markerLagSR struct {
	*scriptedSR
	lsw      time.Duration
	giveUp   time.Duration
	reported func() bool
	mu       sync.Mutex
	first    time.Time
	late     bool
}

func (s *markerLagSR) WaitFinal(ctx context.Context, db, label string, maxWait time.Duration) (starrocks.LabelState, error) {
	st, err := s.scriptedSR.WaitFinal(ctx, db, label, maxWait)
	if !strings.Contains(label, "-takeover-") || err != nil || st != starrocks.StateVisible {
		return st, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.first.IsZero() {
		s.first = time.Now()
	}
	if s.late {
		return st, nil
	}
	waited := time.Since(s.first)
	s.late = waited >= s.lsw && (s.reported() || waited >= s.giveUp)
	return starrocks.StateCommitted, nil
}

// A marker COMMITTED and not published is waited for (it counts only once
// VISIBLE), and a wait past label_state_wait is reported, not silent: a
// StarRocks that stopped publishing holds the take-over, and with it the
// partitions being taken over.
func TestTakeOverReportsAMarkerThatIsNotPublished(t *testing.T) {
	var logs logBuffer
	report := regexp.MustCompile(`COMMITTED and not VISIBLE for (\S+):`)
	sr := &scriptedSR{fakeSR: newFakeSR()}
	lag := &markerLagSR{scriptedSR: sr, lsw: 30 * time.Millisecond, giveUp: 10 * time.Second,
		reported: func() bool { return report.MatchString(logs.String()) }}
	k := probeOutput(t, sr, withClient(lag), withLog(&logs))
	k.o.conf.labelStateWait = lag.lsw
	stem := "benthos-shop-0c0c0c0c"
	k.store = &staticWriters{fakeProgress: fakeProgress{f: sr.fakeSR, table: defaultProgressTable}, rows: map[string][]writerRow{"shop": {
		{writer: "0c0c0c0c", top: 3, label: starrocks.StemLabel(stem, 3), updated: time.Now().Add(-time.Minute)},
	}}}
	require.NoError(t, k.run(context.Background(), k.ticket()))
	lag.mu.Lock()
	assert.True(t, lag.late, "the marker was waited for until it was published")
	lag.mu.Unlock()
	assert.EqualValues(t, 1, k.markers.Load())
	m := report.FindStringSubmatch(logs.String())
	require.NotNil(t, m, "the lagging publish was reported")
	d, err := time.ParseDuration(m[1])
	require.NoError(t, err)
	assert.GreaterOrEqual(t, d, lag.lsw, "reported once the publish lagged past label_state_wait, not before")
}
