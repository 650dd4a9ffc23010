package starrocks_txn

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

func TestProgressEntryCoversComparesNumbers(t *testing.T) {
	var none *progressEntry
	assert.False(t, none.covers("test", 1))
	assert.False(t, none.coversMessage(1))

	e := progressEntry{}
	e.merge("d1", 10, 12)
	// As strings "9" > "10": numbers must be compared.
	assert.True(t, e.coversMessage(9))
	assert.True(t, e.coversMessage(10))
	assert.False(t, e.coversMessage(11))
	assert.False(t, e.coversMessage(100))

	// The per-database offset covers only transactions into that database.
	assert.True(t, e.covers("d1", 12))
	assert.False(t, e.covers("d1", 13))
	assert.False(t, e.covers("d2", 12), "another database's transaction ending at 12 is not held by d1")
	assert.False(t, e.covers("", 12), "a transaction without rows is covered only by committed_offset")
	assert.True(t, e.covers("d2", 9))

	// The highest committed_offset over the databases wins; -1 is "none".
	e.merge("d2", 20, 20)
	e.merge("d3", -1, 5)
	assert.True(t, e.coversMessage(20))
	assert.Equal(t, int64(20), e.through)
	assert.Equal(t, int64(12), e.perDB["d1"])
	f := progressEntry{}
	f.merge("d1", -1, 7)
	assert.False(t, f.hasThrough)
	assert.False(t, f.coversMessage(0))
	assert.True(t, f.covers("d1", 7))
}

// A restarted output gets the whole partition again (Kafka offsets were not
// committed): every transaction StarRocks holds is acknowledged without being
// loaded, the rest are loaded once.
func TestExactlyOnceDropsReplaysAfterRestart(t *testing.T) {
	f := newFakeSR()
	s := newSrc("asm-1")
	var all []*service.Message
	for i := 1; i <= 8; i++ {
		all = append(all, txnMsgs(s, fmt.Sprintf("p%d", i%2), fmt.Sprintf("t%d", i), i)...)
	}
	first, _, fp := eoOutput(t, f, nil, "")
	waitAll(t, []chan error{writeAsync(first, service.MessageBatch(all[:10]))}, 5*time.Second)
	require.NoError(t, first.Close(context.Background()))
	assert.Equal(t, []string{"test"}, fp.ensured[:1], "the progress table is created before the first commit")

	// Restart: the same messages again from the start, then new ones.
	for i := 9; i <= 10; i++ {
		all = append(all, txnMsgs(s, fmt.Sprintf("p%d", i%2), fmt.Sprintf("t%d", i), i)...)
	}
	second, _, _ := eoOutput(t, f, nil, "")
	again := replay(all, "asm-2")
	var chs []chan error
	for i := 0; i < len(again); i += 3 {
		chs = append(chs, writeAsync(second, service.MessageBatch(again[i:min(i+3, len(again))])))
	}
	waitAll(t, chs, 5*time.Second)
	for _, tbl := range []string{"a", "b"} {
		got := countIDs(f.rows(tbl))
		require.Len(t, got, 10, tbl)
		for id, n := range got {
			assert.Equal(t, 1, n, "%s: %s loaded %d times", tbl, id, n)
		}
	}
}

// A restart in the middle of a source transaction: the head of the replay
// is below the progress and is dropped message by message.
func TestExactlyOnceRestartInsideATransaction(t *testing.T) {
	f := newFakeSR()
	s := newSrc("asm-1")
	var all []*service.Message
	for i := 1; i <= 3; i++ {
		all = append(all, txnMsgs(s, "p0", fmt.Sprintf("t%d", i), i)...)
	}
	first, _, _ := eoOutput(t, f, nil, "")
	waitAll(t, []chan error{writeAsync(first, service.MessageBatch(all))}, 5*time.Second)
	require.NoError(t, first.Close(context.Background()))

	all = append(all, txnMsgs(s, "p0", "t4", 4)...)
	second, res, _ := eoOutput(t, f, nil, "")
	// Offsets 4.. : the tail (END) of t2, then t3 and t4.
	tail := replay(all[3:], "asm-2")
	waitAll(t, []chan error{writeAsync(second, service.MessageBatch(tail))}, 5*time.Second)
	assert.Equal(t, map[string]int{"t1": 1, "t2": 1, "t3": 1, "t4": 1}, countIDs(f.rows("b")))
	off, ok := registry.Get(res).Committed("p0")
	require.True(t, ok)
	assert.Equal(t, int64(8), off, "the skipped transactions count as committed through")
}

// A restart that reads nothing but what StarRocks already holds: every
// message is dropped one by one (none opens a transaction), and the input
// must still learn that the partition is committed through the last END, or
// it never commits the group offset past the replays.
func TestExactlyOnceDroppedReplaysPublishCommittedThrough(t *testing.T) {
	f := newFakeSR()
	s := newSrc("asm-1")
	var all []*service.Message
	for i := 1; i <= 3; i++ { // t1: 1-2, t2: 3-4, t3: 5-6
		all = append(all, txnMsgs(s, "p0", fmt.Sprintf("t%d", i), i)...)
	}
	first, _, _ := eoOutput(t, f, nil, "")
	waitAll(t, []chan error{writeAsync(first, service.MessageBatch(all))}, 5*time.Second)
	require.NoError(t, first.Close(context.Background()))

	second, res, _ := eoOutput(t, f, nil, "")
	again := replay(all, "asm-2")
	// The head of t1 alone first: a message inside a transaction publishes
	// nothing (a restart must not begin inside it).
	waitAll(t, []chan error{writeAsync(second, service.MessageBatch(again[:1]))}, 5*time.Second)
	_, ok := registry.Get(res).Committed("p0")
	assert.False(t, ok, "nothing is published inside a source transaction")
	waitAll(t, []chan error{writeAsync(second, service.MessageBatch(again[1:]))}, 5*time.Second)
	assert.Equal(t, map[string]int{"t1": 1, "t2": 1, "t3": 1}, countIDs(f.rows("b")), "nothing was loaded again")
	off, ok := registry.Get(res).Committed("p0")
	require.True(t, ok, "the dropped replays published the partition's committed-through offset")
	assert.Equal(t, int64(6), off)
}

// The per-database rule: a partition's transaction that this database
// already holds is dropped even when an earlier transaction of the partition
// (to another database) keeps committed_offset behind.
func TestExactlyOnceDropsWhatTheDatabaseHolds(t *testing.T) {
	f := newFakeSR()
	o, _, _ := eoOutput(t, f, nil, "")
	o.mu.Lock()
	o.core.progress["p0"] = &progressEntry{through: 2, hasThrough: true, perDB: map[string]int64{"test": 6}}
	o.mu.Unlock()
	s := newSrc("asm")
	var msgs []*service.Message
	for i := 1; i <= 4; i++ { // t1: 1-2, t2: 3-4, t3: 5-6, t4: 7-8
		msgs = append(msgs, txnMsgs(s, "p0", fmt.Sprintf("t%d", i), i)...)
	}
	waitAll(t, []chan error{writeAsync(o, service.MessageBatch(msgs))}, 5*time.Second)
	assert.Equal(t, map[string]int{"t4": 1}, countIDs(f.rows("a")))
}

// Every commit carries, under its label, one progress row per partition it
// commits; the rows say what StarRocks holds once it is visible.
func TestProgressRowsCommitWithTheirRows(t *testing.T) {
	f := newFakeSR()
	o, _, _ := eoOutput(t, f, nil, "")
	s := newSrc("a1")
	// One commit each: every commit carries its partition's progress.
	for i := 0; i < 6; i++ {
		p := fmt.Sprintf("p%d", i%2)
		id := fmt.Sprintf("t%d", i)
		waitAll(t, []chan error{writeAsync(o, service.MessageBatch(txnMsgs(s, p, id, i)))}, 5*time.Second)
	}
	last := map[string]int64{}
	for _, r := range f.rows(defaultProgressTable) {
		assert.Equal(t, "pl", r["pipeline_id"])
		last[r["source_partition"].(string)] = int64(r["committed_offset"].(float64))
		assert.NotEmpty(t, r["updated_at"])
	}
	assert.Equal(t, map[string]int64{"p0": 6, "p1": 6}, last)
	f.mu.Lock()
	defer f.mu.Unlock()
	// The highest writer-row number committed before a commit.
	var heldTop int64
	for i, c := range f.commits {
		withRows := map[string]string{}
		for _, r := range c.rows["a"] {
			var n int
			_, _ = fmt.Sscanf(idOf(r), "t%d", &n)
			withRows[fmt.Sprintf("p%d", n%2)] = idOf(r) // the last one wins
		}
		// Every commit carries the writer's row: its floor is above every
		// label number committed so far, the label's own included.
		writers := 0
		_, num, ok := starrocks.SplitSeqLabel(c.label)
		require.True(t, ok, c.label)
		for _, r := range c.rows[writersTable(defaultProgressTable)] {
			writers++
			assert.Equal(t, c.label, r["label"])
			assert.Equal(t, "pl", r["pipeline_id"])
			assert.NotEmpty(t, r["updated_at"])
			// Its own label's number, or the higher number of a row
			// committed before it (the anchor committed for it), so that
			// merge_condition keeps it over every earlier row once it
			// commits.
			top := int64(r["label_number"].(float64))
			assert.Equal(t, max(num, heldTop), top, "the writer row names its own label's number, or the highest earlier one")
			heldTop = max(heldTop, top)
			open, err := starrocks.ParseOpenLabels(r["open_labels"].(string))
			require.NoError(t, err)
			if len(c.rows["a"]) == 0 {
				assert.NotEmpty(t, open, "an anchor lists the label of the commit it precedes")
			}
			for _, x := range open {
				assert.NotEqual(t, num, x)
			}
		}
		assert.Equal(t, 1, writers, "commit %s carries one writer row", c.label)
		if i == 0 {
			assert.Empty(t, c.rows["a"], "the first commit is the anchor: the writer row alone")
		}
		withProgress := map[string]string{}
		for _, r := range c.rows[defaultProgressTable] {
			withProgress[r["source_partition"].(string)] = r["source_txn_id"].(string)
			assert.Equal(t, c.label, r["label"])
			assert.Equal(t, r["committed_offset"], r["txn_end_offset"], "one database: everything committed is resolved")
		}
		assert.Equal(t, withRows, withProgress, "commit %s: one progress row per partition, naming its last source transaction", c.label)
	}
}

// A dead-lettered transaction counts as resolved in the progress row of the
// next commit of its partition, so a restart does not dead-letter it again.
func TestExactlyOnceDeadLetteredCountsAsResolved(t *testing.T) {
	f := newFakeSR()
	dl := &fakeDL{}
	s := newSrc("asm-1")
	var all []*service.Message
	all = append(all, txnMsgs(s, "p0", "t1", 1)...)
	bad := txnMsgs(s, "p0", "t2", 2)
	bad[0].SetError(fmt.Errorf("boom"))
	all = append(all, bad...)
	all = append(all, txnMsgs(s, "p0", "t3", 3)...)
	first, _, _ := eoOutput(t, f, dl, "")
	waitAll(t, []chan error{writeAsync(first, service.MessageBatch(all[:4]))}, 5*time.Second)
	waitAll(t, []chan error{writeAsync(first, service.MessageBatch(all[4:]))}, 5*time.Second)
	require.NoError(t, first.Close(context.Background()))
	require.Equal(t, []string{"t2"}, dl.txnIDs())

	second, _, _ := eoOutput(t, f, dl, "")
	waitAll(t, []chan error{writeAsync(second, service.MessageBatch(replay(all, "asm-2")))}, 5*time.Second)
	assert.Equal(t, []string{"t2"}, dl.txnIDs(), "not dead-lettered a second time")
	assert.Equal(t, map[string]int{"t1": 1, "t3": 1}, countIDs(f.rows("a")))
}

// After a fence the partition's progress is read again: a new owner may
// have moved it on.
func TestExactlyOnceFenceRereadsProgress(t *testing.T) {
	f := newFakeSR()
	o, _, fp := eoOutput(t, f, nil, "")
	s := newSrc("asm")
	waitAll(t, []chan error{writeAsync(o, service.MessageBatch(txnMsgs(s, "p0", "t1", 1)))}, 5*time.Second)
	fp.mu.Lock()
	reads := fp.reads
	fp.mu.Unlock()
	require.Equal(t, 1, reads)
	require.NoError(t, o.fence(context.Background(), "p0"))
	// Meanwhile another owner committed t2 (offsets 3-4).
	other, _, _ := eoOutput(t, f, nil, "")
	msgs := append(txnMsgs(s, "p0", "t2", 2), txnMsgs(s, "p0", "t3", 3)...)
	waitAll(t, []chan error{writeAsync(other, service.MessageBatch(replay(msgs[:2], "asm-x")))}, 5*time.Second)
	// This output gets the partition back and is handed t2 again.
	waitAll(t, []chan error{writeAsync(o, service.MessageBatch(replay(msgs, "asm-y")))}, 5*time.Second)
	assert.Equal(t, map[string]int{"t1": 1, "t2": 1, "t3": 1}, countIDs(f.rows("a")))
	fp.mu.Lock()
	assert.Equal(t, 2, fp.reads)
	fp.mu.Unlock()
}

// A partition whose progress read is slow holds only its own messages; the
// other partitions of the same assembler are admitted and committed. A fence
// releases the messages that wait.
func TestExactlyOnceProgressReadHoldsOnlyItsPartition(t *testing.T) {
	f := newFakeSR()
	o, _, fp := eoOutput(t, f, nil, "")
	g := &gatedProgress{fakeProgress: fp, part: "p1", gate: make(chan struct{})}
	o.setProgressStore(g)
	s := newSrc("asm")
	slow := writeAsync(o, service.MessageBatch(txnMsgs(s, "p1", "t1", 1)))
	// p1's read has begun: p0's messages, which come after, are not in it.
	waitCore(t, o, "p1's read began", func(k *core) bool { return k.progressClaimed["p1"] })
	fast := writeAsync(o, service.MessageBatch(txnMsgs(s, "p0", "t2", 2)))
	waitAll(t, []chan error{fast}, 5*time.Second)
	assert.Equal(t, map[string]int{"t2": 1}, countIDs(f.rows("a")))
	select {
	case err := <-slow:
		t.Fatalf("p1 was acknowledged before its progress was read: %v", err)
	default:
	}
	close(g.gate)
	waitAll(t, []chan error{slow}, 5*time.Second)
	assert.Equal(t, map[string]int{"t1": 1, "t2": 1}, countIDs(f.rows("a")))

	// Fenced while waiting: released with success, never loaded. The read
	// the fence outdated is dropped, and not read again while no message of
	// p2 waits (TestExactlyOnceReadOutdatedByAFenceIsNotKept).
	fenceWhileReading(t, o, fp, s, "p2", "t3")
	quiesce(t, o)
	o.mu.Lock()
	assert.Nil(t, o.core.progress["p2"], "nothing kept of the outdated read")
	o.mu.Unlock()
	assert.NotContains(t, countIDs(f.rows("a")), "t3")
}

// A reader that begins only after a fence released the messages that
// waited for it (its goroutine scheduled late on a loaded machine) reads
// nothing and keeps nothing: a value read then may predate the partition's
// next owner's commits (TestExactlyOnceReadOutdatedByAFenceIsNotKept).
func TestExactlyOnceReaderBegunAfterTheFenceReadsNothing(t *testing.T) {
	f := newFakeSR()
	o, _, fp := eoOutput(t, f, nil, "")
	fenceWhileReading(t, o, fp, newSrc("asm"), "p2", "t3")
	fp.mu.Lock()
	before := fp.reads
	fp.mu.Unlock()

	// The late reader: the fence is over and nothing of p2 waits.
	o.mu.Lock()
	o.core.progressLoading["p2"] = true
	o.mu.Unlock()
	o.wg.Add(1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		o.readProgressLoop("p2")
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the late reader did not stop")
	}
	fp.mu.Lock()
	assert.Equal(t, before, fp.reads, "nothing read")
	fp.mu.Unlock()
	o.mu.Lock()
	assert.Nil(t, o.core.progress["p2"], "nothing kept")
	assert.False(t, o.core.progressLoading["p2"], "the next message starts a read of its own")
	o.mu.Unlock()
}

// A progress read that a fence outdated, with nothing of the partition
// waiting, keeps nothing: when the partition comes back after another owner
// committed more of it, its progress is read afresh. (Before, the reader
// read again at once and kept that value, and the partition's next
// assignment applied what the other owner had committed meanwhile a second
// time: the 8-minute fleet soak caught two events so doubled.)
func TestExactlyOnceReadOutdatedByAFenceIsNotKept(t *testing.T) {
	f := newFakeSR()
	o, _, fp := eoOutput(t, f, nil, "")
	g := &gatedProgress{fakeProgress: fp, part: "p0", gate: make(chan struct{})}
	o.setProgressStore(g)
	s := newSrc("asm")
	msgs := append(append(txnMsgs(s, "p0", "t1", 1), txnMsgs(s, "p0", "t2", 2)...), txnMsgs(s, "p0", "t3", 3)...)
	waiting := writeAsync(o, service.MessageBatch(msgs[:2]))
	waitCore(t, o, "t1 waits for p0's progress", func(k *core) bool { return len(k.progressWait["p0"]) == 2 })
	require.NoError(t, o.fence(context.Background(), "p0"))
	waitAll(t, []chan error{waiting}, time.Second)
	close(g.gate)
	waitCore(t, o, "p0's read ended", func(k *core) bool { return !k.progressLoading["p0"] })

	// Another owner commits t1 and t2 meanwhile.
	other, _, _ := eoOutput(t, f, nil, "")
	waitAll(t, []chan error{writeAsync(other, service.MessageBatch(replay(msgs[:4], "asm-x")))}, 5*time.Second)
	require.Equal(t, map[string]int{"t1": 1, "t2": 1}, countIDs(f.rows("a")))

	// This output gets p0 back and is handed t1, t2 and t3.
	waitAll(t, []chan error{writeAsync(o, service.MessageBatch(replay(msgs, "asm-y")))}, 5*time.Second)
	assert.Equal(t, map[string]int{"t1": 1, "t2": 1, "t3": 1}, countIDs(f.rows("a")), "nothing applied twice")
}

// exactly_once: a commit that carries later transactions of a partition
// waits until its earlier poisoned transaction is in dead_letter, since the
// commit's progress row makes a restart skip everything before it. A
// transaction complete after the poisoned one is held out of commit cycles
// until then (deadLetterHolds); one already in the cycle whose isolation
// poisoned the earlier one holds its commit (awaitDeadLetters).
func TestExactlyOnceCommitWaitsForEarlierDeadLetter(t *testing.T) {
	t.Run("poisoned at admission", func(t *testing.T) {
		f := newFakeSR()
		dl := &gatedDL{gate: make(chan struct{})}
		o, _, _ := eoOutput(t, f, dl, "")
		s := newSrc("asm")
		bad := txnMsgs(s, "p0", "t1", 1)
		bad[1].SetError(fmt.Errorf("boom"))
		chBad := writeAsync(o, service.MessageBatch(bad))
		chGood := writeAsync(o, service.MessageBatch(txnMsgs(s, "p0", "t2", 2)))
		waitCore(t, o, "t2 is complete and held while t1's dead-letter write waits", func(k *core) bool {
			p := k.parts[pkey{"asm", "p0"}]
			return p != nil && len(p.active) == 1 && p.active[0].id == "t2"
		})
		assert.Empty(t, f.rows("a"), "t2 is not committed while t1 is not in dead_letter")
		close(dl.gate)
		waitAll(t, []chan error{chBad, chGood}, 5*time.Second)
		assert.Equal(t, map[string]int{"t2": 1}, countIDs(f.rows("a")))
		assert.Equal(t, []string{"t1"}, dl.txnIDs())
	})
	t.Run("poisoned in its cycle", func(t *testing.T) {
		f := newFakeSR()
		f.unknownTables["missing"] = true
		dl := &gatedDL{gate: make(chan struct{})}
		var logs logBuffer
		o, _, _ := eoOutput(t, f, dl, "", withLog(&logs))
		s := newSrc("asm")
		// One call: both are complete before a cycle takes them.
		both := append(service.MessageBatch{s.row("p0", "t1", "missing", map[string]any{"id": "t1", "txn": "t1"}, true)}, txnMsgs(s, "p0", "t2", 2)...)
		ch := writeAsync(o, both)
		waitLogged(t, &logs, 0, "t2's commit waits for t1's dead-letter write", "until the earlier poisoned transactions of its partitions are in dead_letter")
		assert.Empty(t, f.rows("a"), "t2 is not committed while t1 is not in dead_letter")
		close(dl.gate)
		waitAll(t, []chan error{ch}, 5*time.Second)
		assert.Equal(t, map[string]int{"t2": 1}, countIDs(f.rows("a")))
		assert.Equal(t, []string{"t1"}, dl.txnIDs())
	})
}

// The README shows the DDL the output runs.
func TestReadmeShowsProgressDDL(t *testing.T) {
	b, err := os.ReadFile("README.md")
	require.NoError(t, err)
	for _, want := range []string{starrocks.ProgressDDL("<database>", defaultProgressTable), starrocks.WritersDDL("<database>", writersTable(defaultProgressTable))} {
		var indented []string
		for _, l := range strings.Split(want, "\n") {
			indented = append(indented, "  "+l)
		}
		assert.Contains(t, string(b), strings.Join(indented, "\n"))
	}
}

// The rows the output loads into the progress and writers tables name
// exactly the columns of the tables it creates (internal/starrocks).
func TestLoadedRowsNameTheTablesColumns(t *testing.T) {
	names := func(v any) []string {
		rt := reflect.TypeOf(v)
		var out []string
		for i := 0; i < rt.NumField(); i++ {
			out = append(out, strings.Split(rt.Field(i).Tag.Get("json"), ",")[0])
		}
		return out
	}
	assert.Equal(t, starrocks.ProgressColumns, names(progressRow{}))
	assert.Equal(t, starrocks.WritersColumns, names(writerRecord{}))
	assert.Contains(t, starrocks.ProgressDDL("d", "t"), fmt.Sprintf("`pipeline_id` VARCHAR(%d)", maxPipelineID), "pipeline_id fits its column")
}

// The committed_offset rule: a replayed source transaction that no
// database's own row covers (it was dead-lettered, and its database never
// committed anything of the partition) is still resolved when the
// partition's committed_offset is at or past its END, and is acknowledged
// without being loaded or dead-lettered again. Its rows carry no
// starrocks_source_offset, only its END marker does, so the message-level
// drop below committed_offset does not catch them: the transaction-level
// rule must.
func TestExactlyOnceReplayCoveredOnlyByCommittedOffset(t *testing.T) {
	f := newFakeSR()
	dl := &fakeDL{}
	s := newSrc("asm-1")
	var all []*service.Message
	all = append(all, txnMsgs(s, "p0", "t1", 1)...)
	// t2 writes to another database and is poisoned: dead-lettered, it
	// leaves no progress row in that database.
	noOffset := func(body, table string) *service.Message {
		m := service.NewMessage([]byte(body))
		s.mu.Lock()
		s.seq++
		contract.Write(m, contract.Meta{Partition: "p0", Database: "other", Table: table, TxnID: "t2",
			HasSeq: true, Seq: s.seq, SeqSource: s.name})
		s.mu.Unlock()
		return m
	}
	bad := []*service.Message{noOffset(`{"id":"t2","txn":"t2"}`, "a"), noOffset(`{"id":"t2","txn":"t2","n":2}`, "b"), s.marker("p0", "t2", false)}
	bad[0].SetError(fmt.Errorf("boom"))
	all = append(all, bad...)
	all = append(all, txnMsgs(s, "p0", "t3", 3)...)
	first, _, fp := eoOutput(t, f, dl, "")
	waitAll(t, []chan error{writeAsync(first, service.MessageBatch(all[:2]))}, 5*time.Second)
	waitAll(t, []chan error{writeAsync(first, service.MessageBatch(all[2:]))}, 5*time.Second)
	require.NoError(t, first.Close(context.Background()))
	require.Equal(t, []string{"t2"}, dl.txnIDs())
	es, err := fp.read(context.Background(), "pl", []string{"p0"})
	require.NoError(t, err)
	e := es["p0"]
	_, otherHolds := e.perDB["other"]
	require.False(t, otherHolds, "the database other holds no row of p0: only committed_offset covers t2")
	require.True(t, e.hasThrough)
	require.GreaterOrEqual(t, e.through, int64(3), "committed_offset is past t2's END (offset 3)")

	second, _, _ := eoOutput(t, f, dl, "")
	waitAll(t, []chan error{writeAsync(second, service.MessageBatch(replay(all, "asm-2")))}, 5*time.Second)
	assert.Equal(t, []string{"t2"}, dl.txnIDs(), "not dead-lettered a second time")
	assert.Equal(t, map[string]int{"t1": 1, "t3": 1}, countIDs(f.rows("a")), "nothing loaded again")
}

// A partition that comes back to the same output while the commit that
// carried it before a fence that gave up is still in flight (the FE
// applies it late): the partition's progress is read only once that commit
// is resolved, or the read misses it and the partition's next assignment
// applies its source transactions a second time.
func TestExactlyOnceReadWaitsForTheFencedPartitionsCommitInFlight(t *testing.T) {
	f := newFakeSR()
	gate := make(chan struct{})
	f.commitGate = gate
	o, _, _ := eoOutput(t, f, nil, "")
	s := newSrc("asm")
	msgs := append(txnMsgs(s, "p0", "t1", 1), txnMsgs(s, "p0", "t2", 2)...)
	inCommit := writeAsync(o, service.MessageBatch(msgs[:2]))
	waitCommitting(t, o)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	require.Error(t, o.fence(ctx, "p0"), "the fence gives up: the commit does not resolve in time")

	// p0 comes back to this output, which is handed t1 and t2 again.
	back := writeAsync(o, service.MessageBatch(replay(msgs, "asm-y")))
	waitCore(t, o, "p0's read began and waits for the commit in flight, or ended", func(k *core) bool {
		return k.progress["p0"] != nil || k.progressBehind["p0"]
	})
	close(gate) // the FE applies the commit sent before the fence
	waitAll(t, []chan error{inCommit, back}, 5*time.Second)
	quiesce(t, o)
	assert.Equal(t, map[string]int{"t1": 1, "t2": 1}, countIDs(f.rows("a")), "nothing applied twice")
}

// publishLagSR is the fake server where the first commit with data rows is
// acknowledged and then COMMITTED, not VISIBLE, until published is closed
// (an FE that answers a commit whose publish timed out): label-state
// queries say so, and a progress read does not see its rows (hidden).
type publishLagSR struct {
	*fakeSR
	published chan struct{}
	mu        sync.Mutex
	first     string
	polls     int
}

func (s *publishLagSR) Commit(ctx context.Context, t starrocks.Txn) error {
	s.fakeSR.mu.Lock()
	data := false
	if ft := s.fakeSR.txns[t.Label]; ft != nil {
		_, data = ft.pending["a"]
	}
	s.fakeSR.mu.Unlock()
	err := s.fakeSR.Commit(ctx, t)
	if err == nil && data {
		s.mu.Lock()
		if s.first == "" {
			s.first = t.Label
		}
		s.mu.Unlock()
	}
	return err
}

func (s *publishLagSR) hidden(label string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if label != s.first {
		return false
	}
	select {
	case <-s.published:
		return false
	default:
		return true
	}
}

func (s *publishLagSR) WaitFinal(ctx context.Context, db, label string, maxWait time.Duration) (starrocks.LabelState, error) {
	if s.hidden(label) {
		s.mu.Lock()
		s.polls++
		s.mu.Unlock()
		return starrocks.StateCommitted, nil
	}
	return s.fakeSR.WaitFinal(ctx, db, label, maxWait)
}

// The same return of a partition to this output, the commit a fence gave
// up on then acknowledged at COMMITTED and published later: the progress is
// read only once it is VISIBLE, or the read misses it as well.
func TestExactlyOnceReadWaitsForTheFencedPartitionsCommitToBeVisible(t *testing.T) {
	f := newFakeSR()
	gate := make(chan struct{})
	f.commitGate = gate
	sr := &publishLagSR{fakeSR: f, published: make(chan struct{})}
	o, _, fp := eoOutput(t, f, nil, "retry_backoff: { initial_interval: 1ms, max_interval: 5ms }\n", withClient(sr))
	fp.hide = sr.hidden
	s := newSrc("asm")
	msgs := append(txnMsgs(s, "p0", "t1", 1), txnMsgs(s, "p0", "t2", 2)...)
	inCommit := writeAsync(o, service.MessageBatch(msgs[:2]))
	waitCommitting(t, o)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	require.Error(t, o.fence(ctx, "p0"), "the fence gives up: the commit does not resolve in time")

	back := writeAsync(o, service.MessageBatch(replay(msgs, "asm-y")))
	waitCore(t, o, "p0's read waits for the commit in flight", func(k *core) bool { return k.progressBehind["p0"] })
	close(gate) // the FE commits t1's cycle and acknowledges it before its publish
	require.Eventually(t, func() bool {
		o.mu.Lock()
		read := o.core.progress["p0"] != nil
		o.mu.Unlock()
		sr.mu.Lock()
		defer sr.mu.Unlock()
		return read || sr.polls > 0
	}, 5*time.Second, 5*time.Millisecond, "p0's progress was read, or the commit's publish is waited for")
	close(sr.published)
	waitAll(t, []chan error{inCommit, back}, 5*time.Second)
	quiesce(t, o)
	assert.Equal(t, map[string]int{"t1": 1, "t2": 1}, countIDs(f.rows("a")), "nothing applied twice")
}

// fenceWhileReading writes a transaction of part whose progress read is
// held, fences part while the read waits (the write is released, nothing
// loaded), then lets the read finish and waits until it stopped.
func fenceWhileReading(t *testing.T, o *Output, fp *fakeProgress, s *src, part, id string) {
	t.Helper()
	g := &gatedProgress{fakeProgress: fp, part: part, gate: make(chan struct{})}
	o.setProgressStore(g)
	waiting := writeAsync(o, service.MessageBatch(txnMsgs(s, part, id, 3)))
	waitCore(t, o, id+" waits for its partition's progress", func(k *core) bool { return len(k.progressWait[part]) == 2 })
	require.NoError(t, o.fence(context.Background(), part))
	waitAll(t, []chan error{waiting}, time.Second)
	close(g.gate)
	waitCore(t, o, part+"'s read stopped", func(k *core) bool { return !k.progressLoading[part] })
}
