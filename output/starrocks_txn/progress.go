package starrocks_txn

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// exactly_once (ARCHITECTURE.md §7): the progress table, what StarRocks holds
// of each partition (progressEntry), reading it before a partition's first
// message, and the progress rows every commit carries.

// maxPipelineID bounds pipeline_id to its column's width.
const maxPipelineID = starrocks.PipelineIDWidth

// writersTable is the name of the writers table that goes with a progress
// table.
func writersTable(progressTable string) string {
	return progressTable + "_writers"
}

// progressEntry is what StarRocks durably holds for one partition of this
// pipeline: the highest committed_offset over every database (every source
// transaction ending at or below it is resolved), and, per database, the END
// offset of the partition's last source transaction committed there.
type progressEntry struct {
	through    int64
	hasThrough bool
	perDB      map[string]int64
}

// covers reports whether a source transaction of the partition that ends at
// end and writes to db (empty: no rows) is already resolved in StarRocks, so
// that loading it again would apply it twice. Offsets are numbers.
func (e *progressEntry) covers(db string, end int64) bool {
	if e == nil {
		return false
	}
	if e.hasThrough && end <= e.through {
		return true
	}
	if db == "" {
		return false
	}
	y, ok := e.perDB[db]
	return ok && end <= y
}

// coversMessage reports whether a single message at offset is at or below
// the partition's resolved-through offset: it belongs to a resolved source
// transaction and is acknowledged without being loaded.
func (e *progressEntry) coversMessage(offset int64) bool {
	return e != nil && e.hasThrough && offset <= e.through
}

// merge adds one database's row.
func (e *progressEntry) merge(db string, through, txnEnd int64) {
	if through >= 0 && (!e.hasThrough || through > e.through) {
		e.through, e.hasThrough = through, true
	}
	if e.perDB == nil {
		e.perDB = map[string]int64{}
	}
	if cur, ok := e.perDB[db]; !ok || txnEnd > cur {
		e.perDB[db] = txnEnd
	}
}

// progressStore creates and reads the progress table.
type progressStore interface {
	// ensure creates the progress table of db when it is missing and checks
	// that it has the output's columns.
	ensure(ctx context.Context, db string) error
	// read returns the durable progress of pipelineID's partitions, by
	// partition (one without a row in any database is absent: nothing
	// held), reading them together.
	read(ctx context.Context, pipelineID string, partitions []string) (map[string]progressEntry, error)
	// writers returns the writer rows of pipelineID, by database, of every
	// database with a writers table.
	writers(ctx context.Context, pipelineID string) (map[string][]writerRow, error)
	// writerRow returns the row of one writer of pipelineID in db's
	// writers table (found false: none).
	writerRow(ctx context.Context, db, pipelineID, writer string) (r writerRow, found bool, err error)
	// progressRow returns the row of partition in db's progress table,
	// with the label that wrote it (found false: none).
	progressRow(ctx context.Context, db, pipelineID, partition string) (r heldProgress, found bool, err error)
}

// heldProgress is the progress row of one partition StarRocks holds in one
// database, and the label that wrote it.
type heldProgress struct {
	through int64
	label   string
}

// metaProgress is the progress store over the FE's MySQL port.
type metaProgress struct {
	meta  *starrocks.Meta
	table string
	// partitions is set when the progress table itself is used
	// (exactly_once); the writers table always is.
	partitions bool
}

func (s metaProgress) ensure(ctx context.Context, db string) error {
	var tables []starrocks.TableDef
	if s.partitions {
		tables = append(tables, starrocks.TableDef{Name: s.table, DDL: starrocks.ProgressDDL(db, s.table), Columns: starrocks.ProgressColumns})
	}
	w := writersTable(s.table)
	tables = append(tables, starrocks.TableDef{Name: w, DDL: starrocks.WritersDDL(db, w), Columns: starrocks.WritersColumns})
	return s.meta.EnsureTables(ctx, db, tables...)
}

// read asks every database holding the progress table for the partitions
// together: a few statements per database (starrocks.ProgressReadChunk
// partitions each), however many partitions were assigned at once.
func (s metaProgress) read(ctx context.Context, pipelineID string, partitions []string) (map[string]progressEntry, error) {
	rows, err := s.meta.ReadProgressOf(ctx, s.table, pipelineID, partitions)
	if err != nil {
		return nil, err
	}
	out := make(map[string]progressEntry, len(rows))
	for part, rs := range rows {
		e := progressEntry{perDB: make(map[string]int64, len(rs))}
		for _, r := range rs {
			e.merge(r.DB, r.Through, r.TxnEnd)
		}
		out[part] = e
	}
	return out, nil
}

func (s metaProgress) writers(ctx context.Context, pipelineID string) (map[string][]writerRow, error) {
	rows, err := s.meta.ReadWriterRows(ctx, writersTable(s.table), pipelineID)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]writerRow, len(rows))
	for db, rs := range rows {
		for _, r := range rs {
			out[db] = append(out[db], writerRow{writer: r.Writer, top: r.Number, open: r.Open, label: r.Label, updated: r.Updated})
		}
	}
	return out, nil
}

func (s metaProgress) writerRow(ctx context.Context, db, pipelineID, writer string) (writerRow, bool, error) {
	r, found, err := s.meta.ReadWriterRow(ctx, db, writersTable(s.table), pipelineID, writer)
	if err != nil || !found {
		return writerRow{}, false, err
	}
	return writerRow{writer: r.Writer, top: r.Number, open: r.Open, label: r.Label, updated: r.Updated}, true, nil
}

func (s metaProgress) progressRow(ctx context.Context, db, pipelineID, partition string) (heldProgress, bool, error) {
	r, found, err := s.meta.ReadProgressRow(ctx, db, s.table, pipelineID, partition)
	if err != nil || !found {
		return heldProgress{}, false, err
	}
	return heldProgress{through: r.Through, label: r.Label}, true, nil
}

// progressRow is one row of the progress table as loaded.
type progressRow struct {
	Pipeline  string `json:"pipeline_id"`
	Partition string `json:"source_partition"`
	Through   int64  `json:"committed_offset"`
	TxnEnd    int64  `json:"txn_end_offset"`
	TxnID     string `json:"source_txn_id"`
	Label     string `json:"label"`
	Updated   string `json:"updated_at"`
}

// progressRows returns one row for every partition with a source transaction
// in c, as StarRocks will hold it once c commits:
//
//   - committed_offset: the END offset of the last transaction of the
//     partition's prefix in which every transaction is resolved or in c (or
//     what is already known resolved, when that prefix is broken by an
//     earlier transaction still pending elsewhere — in another database's
//     cycle or on its way to dead_letter);
//   - txn_end_offset and source_txn_id: the partition's last transaction in
//     c, which this database holds once c commits.
//
// Loaded under c's label (with the writer's row in the writers table,
// writerrow.go), the rows become visible with the data or not at all.
func (k *core) progressRows(c *cycle, now time.Time) []progressRow {
	in := make(map[*srcTxn]bool, len(c.txns))
	var parts []*partition
	seen := map[*partition]bool{}
	for _, t := range c.txns {
		in[t] = true
		if !seen[t.p] {
			seen[t.p] = true
			parts = append(parts, t.p)
		}
	}
	byPart := map[string]*progressRow{}
	at := now.UTC().Format(starrocks.RowTimeLayout)
	for _, p := range parts {
		if p.fenced || p.key.partition == noContractPartition {
			continue
		}
		through, found := p.published, p.hasPublished
		if e := k.progress[p.key.partition]; e != nil && e.hasThrough && (!found || e.through > through) {
			through, found = e.through, true
		}
		for _, t := range p.order {
			if !t.state.resolved() && !in[t] {
				break
			}
			if t.hasEnd && (!found || t.endOffset > through) {
				through, found = t.endOffset, true
			}
		}
		var last *srcTxn
		for _, t := range c.txns {
			if t.p == p && t.hasEnd {
				last = t
			}
		}
		if last == nil {
			continue
		}
		if !found {
			through = -1
		}
		r := byPart[p.key.partition]
		if r == nil {
			r = &progressRow{Pipeline: k.conf.pipelineID, Partition: p.key.partition, Through: through, TxnEnd: last.endOffset,
				TxnID: last.id, Label: c.label, Updated: at}
			byPart[p.key.partition] = r
			continue
		}
		// Two seq sources share the partition: keep the highest.
		if through > r.Through {
			r.Through = through
		}
		if last.endOffset > r.TxnEnd {
			r.TxnEnd, r.TxnID = last.endOffset, last.id
		}
	}
	rows := make([]progressRow, 0, len(byPart)+1)
	for _, k := range sortedKeys(byPart) {
		rows = append(rows, *byPart[k])
	}
	return rows
}

// waitProgress holds it when its partition's durable progress is not
// known yet (exactly_once), or, with writer rows at_least_once, until other
// writers' transactions are final: at start, and after the partition was
// fenced.
// The message has passed the sequencer, so admission of other partitions
// goes on; the partition's messages are applied, in order, once the progress
// is read. It reports whether it was held.
func (k *core) waitProgress(it *item) bool {
	part := it.pk.partition
	if _, ok := k.progress[part]; ok {
		return false
	}
	k.progressWait[part] = append(k.progressWait[part], it)
	if !k.progressLoading[part] {
		k.progressLoading[part] = true
		k.fx.readProgress(part)
	}
	return true
}

// readProgressLoop reads a partition's durable progress, retrying until it
// succeeds or the output closes (admitting without it could apply a source
// transaction twice), then applies the messages that waited for it.
//
// The partitions assigned together are read together (ARCHITECTURE.md §7):
// a read takes, when it starts, every partition whose messages wait for
// their progress and that no other read holds (progressClaim), and asks
// each database for them in a few statements (metaProgress.read). The
// reader of a partition another read holds has nothing to do; the holder
// answers for it, retries included. A read in flight holds only what it
// began with: a partition whose messages arrive meanwhile is read by its
// own reader, beside it.
func (o *Output) readProgressLoop(part string) {
	defer o.wg.Done()
	b := newBackoff(o.conf.retryInitial, o.conf.retryMax)
	var held []string
	warned := map[string]bool{}
	for first := true; ; first = false {
		o.mu.Lock()
		if first {
			if !o.core.progressMine(part) {
				o.mu.Unlock()
				return
			}
		}
		held = o.core.progressClaim(held)
		var read []string
		var behind []string
		gens := make(map[string]int, len(held))
		for _, p := range held {
			if o.core.fencedCommitInFlight(p) {
				behind = append(behind, p)
				continue
			}
			read = append(read, p)
			gens[p] = o.core.progressGen[p]
		}
		o.mu.Unlock()
		if len(held) == 0 {
			return
		}
		for _, p := range behind {
			if !warned[p] {
				warned[p] = true
				o.log.With("partition", p).Warnf("A commit this output sent with partition %s before its fence gave up waiting for it is not resolved yet: the partition's progress is read once it is (its messages wait: a read that missed it would apply its source transactions twice)", p)
			}
		}
		if len(read) == 0 {
			if !sleepCtx(o.ctx, fencedCommitPoll) {
				return
			}
			continue
		}
		es, err := o.track.learn(o.ctx, read)
		if err != nil {
			if o.ctx.Err() != nil {
				return
			}
			o.log.With("partition", partitionsText(read)).Errorf("Checking other writers' transactions and reading the progress: %v; retrying (its messages wait: applying them before could apply a source transaction twice or let an older commit land over them)", err)
			if !sleepCtx(o.ctx, b.next()) {
				return
			}
			continue
		}
		o.mu.Lock()
		now := o.now()
		kept := held[:0]
		for _, p := range held {
			if g, ok := gens[p]; ok && o.core.progressRead(p, g, es[p], now) {
				delete(o.core.progressClaimed, p)
				continue
			}
			kept = append(kept, p)
		}
		held = kept
		o.mu.Unlock()
		if len(held) == 0 {
			return
		}
	}
}

// partitionsText names the partitions of a read in a log line: the first
// few and how many.
func partitionsText(parts []string) string {
	const shown = 5
	if len(parts) <= shown {
		return strings.Join(parts, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(parts[:shown], ", "), len(parts)-shown)
}

// progressMine reports whether the reader started for part has a read to
// start: part's messages wait for its progress and no other read holds it
// (that one answers for it). A reader begun after a fence released what
// waited stops here (progressWanted).
func (k *core) progressMine(part string) bool {
	if k.progressClaimed[part] {
		return false
	}
	return k.progressWanted(part)
}

// progressClaim returns what a read that starts now reads: the partitions
// held already that are still wanted (those no longer wanted are let go),
// and every partition whose messages wait for their progress and that no
// read holds. Sorted, so that a read's statements list them in order.
func (k *core) progressClaim(held []string) []string {
	out := held[:0]
	for _, p := range held {
		if k.progressWanted(p) {
			out = append(out, p)
			continue
		}
		delete(k.progressClaimed, p)
	}
	for p := range k.progressWait {
		if !k.progressClaimed[p] && k.progressLoading[p] {
			k.progressClaimed[p] = true
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// progressWanted reports whether a read of part's progress is still wanted:
// a message of the partition waits for it. A fence releases the waiting
// messages; a read begun after that (the reader's goroutine started late, or
// it retries after an error) would keep a value read before the partition's
// next owner commits, and this output would apply those source transactions
// again when the partition comes back. So the reading stops, and the
// partition's next message starts a read of its own.
func (k *core) progressWanted(part string) bool {
	if len(k.progressWait[part]) > 0 {
		return true
	}
	delete(k.progressLoading, part)
	return false
}

// fencedCommitPoll is how often a progress read that waits for a commit a
// fence gave up on asks again.
const fencedCommitPoll = 10 * time.Millisecond

// fencedCommitInFlight reports whether a commit request this output sent
// before a fence of part gave up waiting for it (fenceGiveUp) still holds a
// transaction of the partition, forgetting the ones resolved since; it
// marks the partition in progressBehind meanwhile. A partition that comes
// back to this output while that commit is unresolved must not have its
// progress read: the FE may apply the commit after the read, and the
// take-over check reads only other writers' rows.
func (k *core) fencedCommitInFlight(part string) bool {
	ts := k.fencedInCommit[part]
	held := ts[:0]
	for _, t := range ts {
		if t.held() {
			held = append(held, t)
		}
	}
	if len(held) == 0 {
		delete(k.fencedInCommit, part)
		delete(k.progressBehind, part)
		return false
	}
	k.fencedInCommit[part] = held
	k.progressBehind[part] = true
	return true
}

// progressRead takes what the tracker learnt of a partition (readProgress)
// and applies, in order, the messages that waited for it. When a fence came
// after the read began (gen is progressGen then) the value may be stale
// already and nothing is kept: it reports false, and the reader reads again,
// when messages of a later assignment wait; when none does it reports true
// and the reading stops. The partition's next message starts a read of its
// own: one begun now could finish before the partition comes back, and a
// value read before its next owner committed would make this output apply
// those source transactions again (and, with writer rows, skip the check
// of that owner's last commit).
func (k *core) progressRead(part string, gen int, e progressEntry, now time.Time) bool {
	if k.progressGen[part] != gen {
		if len(k.progressWait[part]) > 0 {
			return false
		}
		delete(k.progressLoading, part)
		return true
	}
	k.progress[part] = &e
	delete(k.progressLoading, part)
	held := k.progressWait[part]
	delete(k.progressWait, part)
	if e.hasThrough {
		k.fx.logf(logInfo, part, "StarRocks holds its source transactions through offset %d (pipeline %s)", e.through, k.conf.pipelineID)
	}
	for _, it := range held {
		k.apply(it, now)
	}
	k.wakeAtSoftCap()
	return true
}

// progressName reports why the progress table cannot hold a partition's
// row under its name: one that is not valid UTF-8 is loaded as JSON, where
// each invalid byte becomes U+FFFD, and a read by its own name finds that
// row under another name (or another partition's row of the same
// replacement).
func progressName(part string) error {
	if !utf8.ValidString(part) {
		return fmt.Errorf("its name %q is not valid UTF-8", part)
	}
	return nil
}
