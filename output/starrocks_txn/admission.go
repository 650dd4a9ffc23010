package starrocks_txn

// Home of G74 (ARCHITECTURE.md §11.1): exactly_once never takes the assembler's arrival
// counter for a source position: such a transaction is refused whole. Main test:
// TestCoreExactlyOnceArrivalCounterIsRefusedNotTakenForAReplay.
//
// Home of G8 (ARCHITECTURE.md §11.1): a message is acknowledged only once committed,
// dead-lettered, abandoned or released by a fence. Main test: TestAcksHeldUntilCommit.
//
// Home of G20 (ARCHITECTURE.md §11.1): a malformed contract value poisons the transaction the
// message names, whole. Main test: TestMalformedContractValuePoisonsTheTransactionItNames.
//
// Home of G21 (ARCHITECTURE.md §11.1): a poisoned transaction goes whole, in order, to
// dead_letter, or stalls its partition. Main test: TestPoisonedAtAdmission.
//
// Home of G25 (ARCHITECTURE.md §11.1): buffer_size: the soft cap commits early, the hard cap
// blocks only while something is committable. Main test:
// TestHardCapBlocksOnlyWhileSomethingIsCommittable.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/starrocks-txn/benthos-starrocks/internal/jsonscan"
	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// Admission: WriteBatch reads each message's contract and body, holds the
// call at the hard cap, and hands the messages, in emission order
// (sequencer.go), to their partitions (partition.go).

// noContractPartition is the partition of messages without the contract:
// each is its own source transaction, admitted in arrival order.
const noContractPartition = ""

// call is one WriteBatch: it returns once pending reaches zero.
type call struct {
	pending int
	done    chan struct{}
	// held is set while the call counts in core.held: from the moment
	// its messages are sequenced until the first of its last item done or
	// its return.
	held bool
}

// item is one message of a WriteBatch. One is kept per message in flight,
// so its flags are together at the end (ARCHITECTURE.md §9.1; 272 bytes).
type item struct {
	call *call
	msg  *service.Message
	meta contract.Meta
	// pk is the ordered stream the message belongs to; db and table its
	// target when it is a row (isRow), body the row.
	pk    pkey
	db    string
	table string
	body  []byte
	// schema and keys are what the writer established of the row's schema
	// (contract.RowFacts: its source table, or the hash of its keys; the
	// hash is computed here for a row no writer vouched for); change is the
	// table definition of a schema change (contract.KeySchemaChange), which
	// is not a row (schema.go, ARCHITECTURE.md §14.1).
	schema *schema.Table
	keys   uint64
	change *schema.Table
	// poison is why the message's source transaction cannot be loaded
	// (parseContract, parseBody, a duplicate seq).
	poison error
	// t0 is when the message was created (sourceTime), in Unix
	// nanoseconds.
	t0 int64

	isRow    bool
	isDelete bool
	// vouched is set when the assembler that wrote the contract built this
	// very body and established that it is one JSON object, and isDelete
	// with it (contract.Parsed.Row): parseBody then neither validates nor
	// decodes it again.
	vouched bool
	// unsequenced is set for a message that names its partition and
	// transaction but whose starrocks_seq is malformed: it cannot wait for
	// its turn, and is applied to its partition as it arrives. unsureEnd is
	// set when its starrocks_txn_end or starrocks_txn_abort is malformed:
	// whether its transaction ended there is unknown.
	unsequenced bool
	unsureEnd   bool
	// finished is set once the message is acknowledged (itemDone).
	finished bool
}

// sourceTime returns t0 as a time (zero when it is unset).
func (it *item) sourceTime() time.Time {
	if it.t0 == 0 {
		return time.Time{}
	}
	return time.Unix(0, it.t0)
}

// WriteBatch admits the batch's messages in sequence order and returns once
// every one of them is committed, abandoned by its source or dead-lettered.
// It never reports a failure of StarRocks: those are retried inside. It
// returns ctx.Err() when ctx is cancelled, and then nothing uncommitted has
// been acknowledged.
func (o *Output) WriteBatch(ctx context.Context, batch service.MessageBatch) error {
	if len(batch) == 0 {
		return nil
	}
	now := o.now()
	c := &call{pending: len(batch), done: make(chan struct{})}
	items := make([]*item, len(batch))
	// One executor per batch: batch.TryInterpolatedString copies the whole
	// batch on every call, which made parsing quadratic in the batch size.
	targets := batchTargets{db: batch.InterpolationExecutor(o.conf.database), table: batch.InterpolationExecutor(o.conf.table)}
	// The items in one block: they live as long as the call, which
	// returns once every one of them is done.
	block := make([]item, len(batch))
	for i := range batch {
		items[i] = o.parseContractInto(&block[i], batch[i], c, now)
	}
	// The call's seqs are held before the bodies are parsed: a gap they
	// leave is a call on its way, not a dropped message, however long the
	// parse takes (sequence_gap_timeout).
	o.mu.Lock()
	o.core.callEntered(items, now)
	o.mu.Unlock()
	for i := range batch {
		o.parseBody(batch, i, items[i], targets)
	}
	defer func() {
		o.mu.Lock()
		o.core.callLeft(c)
		o.mu.Unlock()
	}()

	// Messages of an assignment that is over are released at admission,
	// unapplied: they need no buffer space.
	fresh := false
	for _, it := range items {
		if !o.staleEpoch(it) {
			fresh = true
			break
		}
	}
	if fresh {
		if err := o.waitForCapacity(ctx); err != nil {
			o.mu.Lock()
			o.core.holdSeqs(items, -1, now)
			o.mu.Unlock()
			return err
		}
	}

	o.mu.Lock()
	o.core.admit(c, items, now)
	o.mu.Unlock()

	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		o.mu.Lock()
		what := o.core.waitedFor(items)
		o.mu.Unlock()
		return fmt.Errorf("%s: %w", what, ctx.Err())
	case <-o.closed:
		return errors.New("starrocks_txn output closed before the batch was committed")
	}
}

// parseContract reads the contract of one message. It and parseBody are
// where a problem with a message becomes a poison: recorded on the item,
// never returned, and carried by apply to the source transaction the
// message joins, which then goes whole to dead_letter (or stalls its
// partition).
func (o *Output) parseContract(msg *service.Message, c *call, now time.Time) *item {
	return o.parseContractInto(&item{}, msg, c, now)
}

// parseContractInto is parseContract into an item the caller allocated.
func (o *Output) parseContractInto(it *item, msg *service.Message, c *call, now time.Time) *item {
	*it = item{call: c, msg: msg, t0: sourceTime(msg, now).UnixNano()}
	parsed := contract.Parse(msg)
	meta := parsed.Meta
	if meta.ArrivalOffset && o.conf.exactlyOnce {
		// An arrival counter is no source position (ARCHITECTURE.md §7):
		// exactly_once takes the message for one without an offset, which
		// poisons its transaction (requireOffset) before any rule could
		// compare the counter with the progress.
		meta.HasOffset, meta.SourceOffset = false, 0
	}
	it.meta = meta
	if parsed.Err != nil {
		it.poison = fmt.Errorf("reading the metadata contract of source transaction %q: %w", meta.TxnID, parsed.Err)
	}
	// A message that names its partition and transaction belongs to that
	// transaction whatever else is malformed: it poisons it, never becomes
	// a transaction of its own (ARCHITECTURE.md §3).
	named := parsed.Named() && parsed.Malformed != 0
	it.unsureEnd = named && (parsed.Malformed.Has(contract.FieldTxnEnd) || parsed.Malformed.Has(contract.FieldTxnAbort))
	switch {
	case meta.HasContract():
		it.pk = pkey{source: meta.SeqSource, partition: meta.Partition}
	case named && parsed.Malformed.Has(contract.FieldSeq):
		it.pk = pkey{source: meta.SeqSource, partition: meta.Partition}
		it.unsequenced = true
	default:
		it.pk = pkey{partition: noContractPartition}
	}
	if perr := msg.GetError(); perr != nil && it.poison == nil {
		it.poison = fmt.Errorf("processing error on the message: %w", perr)
	}
	if parsed.Typed() {
		if body, err := msg.AsBytes(); err == nil {
			if facts, ok := parsed.Row(bytes.TrimSpace(body)); ok {
				it.vouched, it.isDelete = true, facts.Delete
				it.schema, it.keys = facts.Schema, facts.Keys
				if it.schema == nil && it.keys == 0 && o.schemas != nil {
					// A writer that vouched for the row but gave neither
					// its schema nor its keys' hash (Debezium without
					// schemas): the keys are hashed here, or a new field
					// would load unchecked and StarRocks drop it.
					it.keys = rowKeysHash(bytes.TrimSpace(body))
				}
			}
		}
	}
	return it
}

// parseBody reads the row and the target of the message of item it: the
// expensive part of parsing. Problems are recorded as for parseContract.
func (o *Output) parseBody(batch service.MessageBatch, i int, it *item, targets batchTargets) {
	if o.parseHook != nil {
		o.parseHook()
	}
	msg, meta := batch[i], it.meta
	body, berr := msg.AsBytes()
	if berr != nil && it.poison == nil {
		it.poison = fmt.Errorf("reading the message body: %w", berr)
	}
	trimmed := bytes.TrimSpace(body)
	if meta.Marker || meta.TxnAbort || (len(trimmed) == 0 && meta.TxnEnd) {
		return
	}
	change := meta.SchemaChange
	it.isRow = !change
	it.body = trimmed
	if it.poison != nil {
		return
	}
	if change {
		def, err := parseChange(trimmed)
		if err != nil {
			it.poison = err
			return
		}
		it.change = def
	} else if !it.vouched && !o.validRow(it, trimmed) {
		it.poison = errors.New("the message body is not a JSON object")
		return
	}
	// A target read from metadata the message lacks is named with the
	// processor that stamps it; the contract's own value needs no lookup.
	if !o.conf.dbFromContract || meta.Database == "" {
		if err := missingMetaErr(msg, fieldDatabase, o.conf.dbMetaKeys); err != nil {
			it.poison = err
			return
		}
	}
	if !o.conf.tableFromContract || meta.Table == "" {
		if err := missingMetaErr(msg, fieldTable, o.conf.tableMetaKeys); err != nil {
			it.poison = err
			return
		}
	}
	var dbErr, tableErr error
	it.db, it.table, dbErr, tableErr = o.target(targets, i, meta)
	if dbErr != nil {
		it.poison = fmt.Errorf("interpolating database: %w", dbErr)
		return
	}
	if tableErr != nil {
		it.poison = fmt.Errorf("interpolating table: %w", tableErr)
		return
	}
	if err := starrocks.ValidateName("database", it.db); err != nil {
		it.poison = err
		return
	}
	if err := starrocks.ValidateName("table", it.table); err != nil {
		it.poison = err
		return
	}
	if !it.vouched && it.isRow {
		it.isDelete = starrocks.IsDeleteRow(trimmed)
	}
}

// validRow reports whether a row no writer vouched for is one JSON object;
// when the output checks schemas it hashes the row's keys in the same pass
// (ARCHITECTURE.md §14.1).
func (o *Output) validRow(it *item, b []byte) bool {
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	if o.schemas == nil {
		return json.Valid(b)
	}
	st, keys := jsonscan.ObjectKeys(b)
	switch st {
	case jsonscan.OK:
		it.keys = keys.Sum()
		return true
	case jsonscan.Invalid:
		return false
	}
	if !json.Valid(b) {
		return false
	}
	it.keys = rowKeysHash(b)
	return true
}

// rowKeysHash is schema.KeysHash of a JSON object's top-level keys.
func rowKeysHash(b []byte) uint64 {
	if st, keys := jsonscan.ObjectKeys(b); st == jsonscan.OK {
		return keys.Sum()
	}
	var h schema.KeysHash
	for _, k := range topLevelKeys(b) {
		h.AddString(k)
	}
	return h.Sum()
}

// sourceTime is the creation time of the message for the visibility latency:
// the Kafka record timestamp when there is one, else its arrival. The
// kafka_txn input sets the timestamps as integers, read as they are; any
// other value is read as its text, as before.
func sourceTime(msg *service.Message, now time.Time) time.Time {
	if ms, ok := metaInt(msg, "kafka_timestamp_ms"); ok && ms > 0 {
		return time.UnixMilli(ms)
	}
	if s, ok := metaInt(msg, "kafka_timestamp_unix"); ok && s > 0 {
		return time.Unix(s, 0)
	}
	return now
}

// metaInt reads an integer metadata value without rendering it as text when
// it is one already.
func metaInt(msg *service.Message, key string) (int64, bool) {
	v, ok := msg.MetaGetMut(key)
	if !ok {
		return 0, false
	}
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	}
	s, _ := msg.MetaGet(key)
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// wakeAtSoftCap is the soft cap: once buffer_size bytes are buffered,
// every database worker is woken to commit its cycle early (worker.go:
// step), after each admission step that may have added rows.
func (k *core) wakeAtSoftCap() {
	if k.buffered < k.conf.bufferSize {
		return
	}
	k.wakeAll(true)
}

// waitForCapacity blocks admission at twice buffer_size while something
// buffered is committable; when nothing is (only open source transactions
// fill the buffer) it admits anyway with an error naming buffer_size, since
// waiting could never end.
func (o *Output) waitForCapacity(ctx context.Context) error {
	for {
		o.mu.Lock()
		full := o.core.full(o.now())
		o.mu.Unlock()
		if !full {
			return nil
		}
		o.wakeWorkers(true)
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for buffer space: %w", ctx.Err())
		case <-o.ctx.Done():
			return errors.New("starrocks_txn output closed")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// full is the hard cap: twice buffer_size buffered while something
// buffered is committable. Past the cap with nothing committable (only open
// source transactions fill the buffer) it is not full, with an error
// naming buffer_size, since waiting could never end.
func (k *core) full(now time.Time) bool {
	if k.buffered < 2*k.conf.bufferSize {
		return false
	}
	if k.committable > 0 {
		return true
	}
	if now.Sub(k.lastCapErr) >= reportEvery {
		k.lastCapErr = now
		k.fx.logf(logError, "", "%d bytes buffered, over twice buffer_size (%d), and nothing buffered is committable (only open source transactions): admitting anyway; raise buffer_size above the largest source transactions in flight", k.buffered, k.conf.bufferSize)
	}
	return false
}

// sequence admits it in seq order of its assembler instance; messages
// without the contract are admitted at once.
func (k *core) sequence(it *item, now time.Time) {
	if it.pk.partition == noContractPartition {
		if k.conf.maxInFlight > 1 && !k.warnedMIF {
			k.warnedMIF = true
			k.fx.logf(logWarn, "", "Messages without the metadata contract (starrocks_partition and starrocks_seq) are admitted in arrival order, each its own transaction, and with max_in_flight %d arrival order is not emission order; use the txn_assembler processor or max_in_flight: 1", k.conf.maxInFlight)
		}
		k.apply(it, now)
		return
	}
	if it.unsequenced {
		k.applyUnsequenced(it, now)
		return
	}
	s := k.sequencer(it.pk.source, now)
	seq := it.meta.Seq
	if s.admitNext(seq, now) {
		k.apply(it, now)
		return
	}
	ready, res := s.offer(seq, it, now)
	switch res {
	case offerLate:
		if s.takeSkipped(seq) {
			// Late after its gap was skipped (late.go).
			k.applyLate(it, now)
			break
		}
		// A copy of an admitted message: the offset check decides.
		k.fx.logf(logWarn, it.pk.String(), "A message with starrocks_seq %d arrived after admission moved past it (next %d); admitting it out of order", seq, s.next)
		k.apply(it, now)
	case offerDuplicate:
		k.fx.logf(logError, "", "A message with starrocks_seq %d of source %q came twice; the second copy is treated as a replay", seq, it.pk.source)
		it.poison = fmt.Errorf("duplicate starrocks_seq %d", seq)
		k.apply(it, now)
	}
	for _, r := range ready {
		k.apply(r, now)
	}
}

// sequencer returns the sequencer of seq source source, making one (which
// goes on from a retired one's next seq) when there is none.
func (k *core) sequencer(source string, now time.Time) *sequencer[*item] {
	s := k.seqs[source]
	if s == nil {
		s = newSequencer[*item]()
		if next, ok := k.retiredSeqs.take(source); ok {
			// A source forgotten while idle comes back: its order goes on.
			s.next = next
		}
		s.touched = now
		k.seqs[source] = s
	}
	return s
}

// holdSeqs records (delta 1) or forgets (delta -1) the seqs of a
// WriteBatch call that waits before admission.
// Consecutive seqs of one source are held as one run, so a batch costs a
// map entry per run, not per message; the same items give the same runs.
func (k *core) holdSeqs(items []*item, delta int, now time.Time) {
	var (
		src  string
		run  seqRun
		open bool
	)
	flush := func() {
		if open {
			k.sequencer(src, now).holdRun(run, delta)
		}
	}
	for _, it := range items {
		if it.pk.partition == noContractPartition || it.unsequenced {
			continue
		}
		seq := it.meta.Seq
		if open && it.pk.source == src && seq == run.to+1 {
			run.to = seq
			continue
		}
		flush()
		src, run, open = it.pk.source, seqRun{seq, seq}, true
	}
	flush()
}

// checkGaps skips a sequence gap that lasted sequence_gap_timeout; a
// gap held by a call waiting for buffer space is not one (the timer starts
// again).
func (k *core) checkGaps(now time.Time) {
	for src, s := range k.seqs {
		ready, from, to, skipped := s.skipGap(now, k.conf.sequenceGapTimeout)
		if !skipped {
			continue
		}
		k.fx.count(ctrSeqGaps, to-from+1, "")
		k.fx.logf(logError, "", "Messages with starrocks_seq %d to %d of assembler %q never arrived within sequence_gap_timeout (%v): skipping them; something between the txn_assembler and this output dropped messages (a filtering processor, a switch or reject_errored)", from, to, src, k.conf.sequenceGapTimeout)
		for _, it := range ready {
			k.apply(it, now)
		}
	}
}

// waitedFor says what a WriteBatch whose context ended was waiting
// for: the first of its messages not acknowledged yet, by the state of the
// source transaction holding it.
func (k *core) waitedFor(items []*item) string {
	mine := map[*item]bool{}
	for _, it := range items {
		if !it.finished {
			mine[it] = true
		}
	}
	if len(mine) == 0 {
		return "waiting for the acknowledgement"
	}
	for _, key := range slices.SortedFunc(maps.Keys(k.parts), func(a, b pkey) int { return strings.Compare(a.String(), b.String()) }) {
		p := k.parts[key]
		if p.stalled != nil && slices.ContainsFunc(p.held, func(it *item) bool { return mine[it] }) {
			return fmt.Sprintf("waiting on partition %s, stalled at poisoned source transaction %q (no dead_letter is set)", p.key, p.stalledTxn)
		}
		txns := p.order
		if p.open != nil {
			txns = append([]*srcTxn{p.open}, txns...)
		}
		for _, t := range txns {
			if !slices.ContainsFunc(t.items, func(it *item) bool { return mine[it] }) {
				continue
			}
			switch {
			case t.inDeadLetter || t.state == txnPoisoned:
				return fmt.Sprintf("waiting for the dead_letter write of source transaction %q of partition %s", t.id, p.key)
			case t.state == txnStalled:
				return fmt.Sprintf("waiting on partition %s, stalled at poisoned source transaction %q (no dead_letter is set)", p.key, t.id)
			case t.state == txnOpen && p.stalled != nil:
				// The rest of it is held behind the stall.
				return fmt.Sprintf("waiting on partition %s, stalled at poisoned source transaction %q (no dead_letter is set)", p.key, p.stalledTxn)
			case t.state == txnOpen:
				return fmt.Sprintf("waiting for the end of source transaction %q of partition %s", t.id, p.key)
			case t.state == txnFenced:
				return fmt.Sprintf("waiting for the release of source transaction %q of partition %s (its partition was handed over)", t.id, p.key)
			default:
				return fmt.Sprintf("waiting for the StarRocks commit of source transaction %q of partition %s", t.id, p.key)
			}
		}
	}
	return "waiting for earlier messages of the batch's source (starrocks_seq order) before the StarRocks commit"
}
