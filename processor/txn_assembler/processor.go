// Package txnassembler provides the txn_assembler processor: it recognises
// where the source transactions of CDC events begin and end, per source
// partition, and stamps the metadata contract (internal/contract) that the
// starrocks_txn output uses to commit whole source transactions atomically.
//
// The processor only annotates and filters: exactly one batch comes out per
// batch in, because Benthos acks a processor's dropped batches at once and
// blocks a pipeline thread on split ones (docs/notes/benthos-semantics.md §0).
package txnassembler

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redpanda-data/benthos/v4/public/bloblang"
	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
)

// Name is the processor's registered name.
const Name = "txn_assembler"

func init() {
	service.MustRegisterBatchProcessor(Name, processorSpec(),
		func(conf *service.ParsedConfig, mgr *service.Resources) (service.BatchProcessor, error) {
			return newFromConfig(conf, mgr)
		})
}

// ErrConcurrentCalls is set on every message of a batch whose ProcessBatch
// call overlapped another call on the same instance.
var ErrConcurrentCalls = errors.New("txn_assembler: ProcessBatch called concurrently on one instance " +
	"(pipeline.threads > 1 shares one processor between threads and loses the source order): " +
	"run the processor under input.processors or set pipeline.threads: 1")

// maxPoisoned bounds how many incomplete transaction ids a partition
// remembers.
const maxPoisoned = 64

const seqSourceRandomBytes = 6

type metrics struct {
	ended      *service.MetricCounter
	aborted    *service.MetricCounter
	dropped    *service.MetricCounter
	errored    *service.MetricCounter
	violations *service.MetricCounter
}

// Processor is the txn_assembler batch processor.
type Processor struct {
	decode decoder
	// fast holds the single-pass decoders and their scratch space.
	fast *fastDecoder
	// cw writes the contract; partNames caches the default partition
	// names.
	cw        contract.Writer
	partNames partitionNames
	// txnField names the event field holding the transaction id, for
	// error messages.
	txnField     string
	partition    *service.InterpolatedString
	sourceOffset *service.InterpolatedString
	tableMapping map[string]string
	database     string
	seqSource    string
	log          *service.Logger
	m            metrics
	// reg tells a message of a revoked assignment (stale epoch) apart.
	reg *registry.Registry

	inFlight atomic.Bool

	mu  sync.Mutex
	seq int64
	// seen finds messages that occur twice in one batch (distinct).
	seen   map[*service.Message]struct{}
	parts  map[string]*partState
	closed bool
}

// partState is the transaction state of one source partition.
type partState struct {
	hasHWM bool
	hwm    int64
	open   *openTxn
	// taint is set when a message that could not be attributed to any
	// transaction arrived with nothing open: the next transaction opened
	// without a BEGIN may be missing that message and is flagged.
	taint string
	// poisoned remembers ids of transactions known to be incomplete (some of
	// their rows were flagged under another transaction).
	poisoned      map[string]string
	poisonedOrder []string
}

type openTxn struct {
	id string
	// poison is why the transaction is known to be incomplete, if it is.
	poison string
}

func newFromConfig(conf *service.ParsedConfig, mgr *service.Resources) (*Processor, error) {
	p := &Processor{parts: map[string]*partState{}, fast: &fastDecoder{}}
	format, err := conf.FieldString(fieldFormat)
	if err != nil {
		return nil, err
	}
	var custom *customMappings
	switch format {
	case formatEnvelope:
		p.decode, p.txnField = p.fast.envelope, "txnId"
	case formatMaxwell:
		p.decode, p.txnField = p.fast.maxwell, "xid"
	case formatCustom:
		if custom, err = customFromConfig(conf.Namespace(fieldCustom)); err != nil {
			return nil, err
		}
		p.decode, p.txnField = custom.decode, "custom.txn_id"
	default:
		return nil, fmt.Errorf("format must be envelope, maxwell or custom, got %q", format)
	}
	if isSet(conf, fieldPartition) {
		if p.partition, err = conf.FieldInterpolatedString(fieldPartition); err != nil {
			return nil, err
		}
	}
	if isSet(conf, fieldSourceOffset) {
		if p.sourceOffset, err = conf.FieldInterpolatedString(fieldSourceOffset); err != nil {
			return nil, err
		}
	}
	if conf.Contains(fieldTableMapping) {
		if p.tableMapping, err = conf.FieldStringMap(fieldTableMapping); err != nil {
			return nil, err
		}
		for k, v := range p.tableMapping {
			if strings.TrimSpace(v) == "" || strings.TrimSpace(k) == "" {
				return nil, fmt.Errorf("table_mapping entry %q: %q: source and target must not be empty", k, v)
			}
			if err := checkMappingTarget(k, v); err != nil {
				return nil, err
			}
		}
	}
	if isSet(conf, fieldDatabase) {
		if p.database, err = conf.FieldString(fieldDatabase); err != nil {
			return nil, err
		}
		if strings.TrimSpace(p.database) == "" {
			return nil, errors.New(errBlankDatabase)
		}
	}
	instance := ""
	if isSet(conf, fieldInstanceID) {
		if instance, err = conf.FieldString(fieldInstanceID); err != nil {
			return nil, err
		}
	}
	if p.seqSource, err = newSeqSource(instance); err != nil {
		return nil, err
	}
	p.log = mgr.Logger()
	met := mgr.Metrics()
	p.m = metrics{
		ended:      met.NewCounter("txn_assembler_transactions_ended"),
		aborted:    met.NewCounter("txn_assembler_transactions_aborted"),
		dropped:    met.NewCounter("txn_assembler_dropped", "kind"),
		errored:    met.NewCounter("txn_assembler_errors", "reason"),
		violations: met.NewCounter("txn_assembler_contract_violations"),
	}
	p.reg = registry.Get(mgr)
	p.reg.OnFence(p.Reset)
	p.registerEnds(format, custom)
	return p, nil
}

func customFromConfig(conf *service.ParsedConfig) (*customMappings, error) {
	var c customMappings
	var err error
	for _, f := range []struct {
		name string
		dst  **bloblang.Executor
	}{
		{fieldCustomKind, &c.kind},
		{fieldCustomTxnID, &c.txnID},
		{fieldCustomDB, &c.database},
		{fieldCustomTable, &c.table},
		{fieldCustomRow, &c.row},
		{fieldCustomDelete, &c.del},
	} {
		if *f.dst, err = conf.FieldBloblang(f.name); err != nil {
			return nil, fmt.Errorf("parsing custom.%s: %w", f.name, err)
		}
	}
	return &c, nil
}

// newSeqSource makes the instance tag: the optional instance id, a dash and
// 12 random hex characters.
func newSeqSource(instance string) (string, error) {
	b := make([]byte, seqSourceRandomBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating the instance tag: %w", err)
	}
	tag := hex.EncodeToString(b)
	if instance != "" {
		tag = instance + "-" + tag
	}
	return tag, nil
}

// SeqSource returns the instance tag stamped as starrocks_seq_source.
func (p *Processor) SeqSource() string { return p.seqSource }

// Reset forgets everything about a partition: its open transaction, its
// offset high-water mark and its incomplete transactions. The output's fence
// calls it through the registry when the partition changes owner.
func (p *Processor) Reset(partition string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	if _, exists := p.parts[partition]; exists {
		p.log.Debugf("txn_assembler: partition %q fenced: state reset", partition)
	}
	delete(p.parts, partition)
}

// Close stops the processor; later fences are ignored.
func (p *Processor) Close(context.Context) error {
	p.mu.Lock()
	p.closed = true
	p.parts = map[string]*partState{}
	p.mu.Unlock()
	return nil
}

// ProcessBatch stamps the contract on each message and returns exactly one
// batch (or none when every message was dropped).
func (p *Processor) ProcessBatch(ctx context.Context, batch service.MessageBatch) ([]service.MessageBatch, error) {
	if !p.inFlight.CompareAndSwap(false, true) {
		p.m.errored.Incr(int64(len(batch)), "concurrent_call")
		p.log.Errorf("%v", ErrConcurrentCalls)
		out := make(service.MessageBatch, len(batch))
		for i, msg := range batch {
			out[i] = msg.Copy()
			out[i].SetError(ErrConcurrentCalls)
		}
		return []service.MessageBatch{out}, nil
	}
	defer p.inFlight.Store(false)

	p.mu.Lock()
	defer p.mu.Unlock()
	w := &writer{p: p, out: make(service.MessageBatch, 0, len(batch))}
	batch = p.distinct(batch)
	for i := range batch {
		p.processOne(w, batch, i)
	}
	w.logFlagged()
	if w.stale > 0 {
		p.log.Debugf("txn_assembler: dropped %d messages of revoked partition assignments (%s older than the partition's current or fenced epoch)", w.stale, contract.KeyPartitionEpoch)
	}
	if len(w.out) == 0 {
		return nil, nil
	}
	return []service.MessageBatch{w.out}, nil
}

// distinct returns batch, or a copy of it in which a message that occurs
// more than once is replaced, from its second occurrence on, by a copy made
// before anything was stamped: emit stamps messages in place, and the same
// message twice in a batch (which no input delivers, but a processor before
// this one may) must still be decoded from its source body each time.
func (p *Processor) distinct(batch service.MessageBatch) service.MessageBatch {
	if len(batch) < 2 {
		return batch
	}
	if p.seen == nil {
		p.seen = make(map[*service.Message]struct{}, len(batch))
	}
	defer clear(p.seen)
	var out service.MessageBatch
	for i, msg := range batch {
		if _, dup := p.seen[msg]; !dup {
			p.seen[msg] = struct{}{}
			continue
		}
		if out == nil {
			out = append(service.MessageBatch(nil), batch...)
		}
		out[i] = msg.Copy()
	}
	if out == nil {
		return batch
	}
	return out
}

// writer collects the emitted messages of one call and numbers them.
type writer struct {
	p   *Processor
	out service.MessageBatch
	// flagged counts the flagged messages per reason; firstErr keeps the
	// first error of each reason for the log.
	flagged  map[string]int
	firstErr map[string]error
	// epoch is the assignment epoch of the message being processed, copied
	// into every message emitted for it; stale counts the dropped ones.
	epoch    uint64
	hasEpoch bool
	stale    int
}

// emission is one message to emit: src's copy with the given body and
// contract.
type emission struct {
	meta contract.Meta
	// body replaces the source body unless keepBody is set; a marker has an
	// empty body. A body set here is a row this processor built: one JSON
	// object whose __op is 1 exactly when del is set.
	body     []byte
	del      bool
	keepBody bool
	err      error
	reason   string
}

// emit stamps src in place and appends it to the output: every input
// message is emitted at most once, so there is nothing to copy (a copy's
// first metadata write would clone the input's whole metadata map), as
// Benthos's own mutation processor changes the messages it is given.
func (w *writer) emit(msg *service.Message, e emission) {
	p := w.p
	row := false
	switch {
	case e.meta.Marker:
		msg.SetBytes(nil)
	case !e.keepBody:
		msg.SetBytes(e.body)
		row = e.body != nil
	}
	p.seq++
	e.meta.HasSeq = true
	e.meta.Seq = p.seq
	e.meta.SeqSource = p.seqSource
	e.meta.HasEpoch, e.meta.Epoch = w.hasEpoch, w.epoch
	if row {
		p.cw.WriteRow(msg, e.meta, e.body, e.del)
	} else {
		p.cw.Write(msg, e.meta)
	}
	if e.err != nil {
		msg.SetError(e.err)
		p.m.errored.Incr(1, e.reason)
		if w.flagged == nil {
			w.flagged = map[string]int{}
			w.firstErr = map[string]error{}
		}
		if w.flagged[e.reason] == 0 {
			w.firstErr[e.reason] = e.err
		}
		w.flagged[e.reason]++
	}
	w.out = append(w.out, msg)
}

// logFlagged logs one line per kind of problem in the batch rather than one
// per message, so that a replayed batch does not flood the log.
func (w *writer) logFlagged() {
	for reason, n := range w.flagged {
		if n == 1 {
			w.p.log.Warnf("%v", w.firstErr[reason])
			continue
		}
		w.p.log.Warnf("%d messages flagged (%s), the first: %v", n, reason, w.firstErr[reason])
	}
}

// flagErr builds the error of a flagged message: it names the partition, the
// transaction and what is wrong.
func flagErr(partition, txn string, format string, args ...any) error {
	return fmt.Errorf("txn_assembler: partition %q, transaction %q: %s", partition, txn, fmt.Sprintf(format, args...))
}

func (p *Processor) state(partition string) *partState {
	ps, exists := p.parts[partition]
	if !exists {
		ps = &partState{}
		p.parts[partition] = ps
	}
	return ps
}

func (p *Processor) processOne(w *writer, batch service.MessageBatch, i int) {
	msg := batch[i]
	ev, decErr := p.decode(msg)
	epoch, hasEpoch, epochErr := contract.ReadEpoch(msg)
	w.epoch, w.hasEpoch = epoch, hasEpoch && epochErr == nil

	partition, err := p.resolvePartition(batch, i, ev)
	if err != nil {
		txn := ev.txnID
		if txn == "" {
			txn = "unknown"
		}
		off, hasOff, _ := p.resolveOffset(batch, i)
		w.emit(msg, emission{
			meta:     contract.Meta{TxnID: txn, TxnEnd: true, HasOffset: hasOff, SourceOffset: off},
			keepBody: true,
			err:      fmt.Errorf("txn_assembler: transaction %q: %w", txn, err),
			reason:   "partition",
		})
		return
	}
	if w.hasEpoch && p.reg.Stale(partition, epoch) {
		// A late message of a revoked assignment: the fence reset the
		// partition, and its new owner reads the message again. Dropping it
		// keeps it from corrupting the reset state; its acknowledgement is
		// ignored by the input.
		p.m.dropped.Incr(1, "stale_epoch")
		w.stale++
		return
	}
	ps := p.state(partition)

	off, hasOff, err := p.resolveOffset(batch, i)
	if err != nil {
		p.bad(w, ps, msg, partition, ev, 0, false, err, "offset")
		return
	}
	if epochErr != nil {
		p.bad(w, ps, msg, partition, ev, off, hasOff, epochErr, "epoch")
		return
	}
	if !hasOff {
		off = ps.nextArrival()
	}
	if ev.bootstrap {
		ev.txnID = "bootstrap@" + strconv.FormatInt(off, 10)
	}

	if ps.hasHWM && off <= ps.hwm {
		p.replay(w, ps, msg, partition, ev, decErr, off)
		return
	}
	ps.hasHWM, ps.hwm = true, off

	if decErr == nil && ev.kind.isData() {
		ev, decErr = p.target(ev)
	}
	if decErr != nil {
		if ev.kind.isData() && ev.txnID != "" {
			p.data(w, ps, msg, partition, ev, off, decErr)
			return
		}
		p.bad(w, ps, msg, partition, ev, off, true, decErr, "bad_input")
		return
	}

	switch ev.kind {
	case kindBegin:
		p.begin(w, ps, msg, partition, ev, off)
	case kindData, kindDataEnd:
		p.data(w, ps, msg, partition, ev, off, nil)
	case kindEnd:
		p.end(w, ps, msg, partition, ev, off)
	case kindAbort:
		p.abort(w, ps, msg, partition, ev, off)
	case kindSkip:
		p.m.dropped.Incr(1, "skip")
	}
}

// nextArrival is the per-partition arrival counter used as the source offset
// when the source has none.
func (ps *partState) nextArrival() int64 {
	if !ps.hasHWM {
		return 0
	}
	return ps.hwm + 1
}

func (ps *partState) poison(id, reason string) {
	if id == "" {
		return
	}
	if ps.poisoned == nil {
		ps.poisoned = map[string]string{}
	}
	if _, exists := ps.poisoned[id]; !exists {
		ps.poisonedOrder = append(ps.poisonedOrder, id)
		if len(ps.poisonedOrder) > maxPoisoned {
			delete(ps.poisoned, ps.poisonedOrder[0])
			ps.poisonedOrder = ps.poisonedOrder[1:]
		}
	}
	ps.poisoned[id] = reason
}

func (ps *partState) unpoison(id string) {
	if _, exists := ps.poisoned[id]; !exists {
		return
	}
	delete(ps.poisoned, id)
	for i, v := range ps.poisonedOrder {
		if v == id {
			ps.poisonedOrder = append(ps.poisonedOrder[:i], ps.poisonedOrder[i+1:]...)
			break
		}
	}
}

// openTxn opens a transaction; explicit is true for a BEGIN.
func (ps *partState) openTxn(id string, explicit bool) *openTxn {
	t := &openTxn{id: id, poison: ps.poisoned[id]}
	if !explicit && ps.taint != "" && t.poison == "" {
		t.poison = ps.taint
	}
	ps.taint = ""
	ps.open = t
	return t
}

func (p *Processor) begin(w *writer, ps *partState, msg *service.Message, partition string, ev event, off int64) {
	switch {
	case ps.open == nil:
		ps.openTxn(ev.txnID, true)
		p.m.dropped.Incr(1, "begin")
	case ps.open.id == ev.txnID:
		// A re-sent BEGIN of the open transaction.
		p.m.dropped.Incr(1, "begin")
	default:
		// The source restarted: discard the open transaction in place of this
		// BEGIN, then open the new one.
		old := ps.open.id
		ps.unpoison(old)
		w.emit(msg, emission{meta: contract.Meta{
			Partition: partition, TxnID: old, TxnAbort: true, Marker: true,
			HasOffset: true, SourceOffset: off,
		}})
		p.m.aborted.Incr(1)
		p.log.Debugf("txn_assembler: partition %q: BEGIN of %q while %q is open: %q aborted", partition, ev.txnID, old, old)
		ps.openTxn(ev.txnID, true)
	}
}

func (p *Processor) data(w *writer, ps *partState, msg *service.Message, partition string, ev event, off int64, dataErr error) {
	isEnd := ev.kind == kindDataEnd
	if ps.open == nil {
		ps.openTxn(ev.txnID, false)
	}
	open := ps.open
	e := emission{meta: contract.Meta{
		Partition: partition, Database: ev.database, Table: ev.table,
		TxnID: open.id, HasOffset: true, SourceOffset: off,
	}}
	if dataErr == nil {
		e.body, e.del = ev.rowJSON, ev.del
	}
	if dataErr != nil {
		e.keepBody = true
		e.err = flagErr(partition, ev.txnID, "%v", dataErr)
		e.reason = "bad_input"
	}

	if open.id != ev.txnID {
		// Two writers interleave in one partition: never merge silently.
		// Flag the row under the open transaction, so that the output
		// dead-letters that one, and remember the row's own transaction as
		// incomplete.
		reason := fmt.Sprintf("row of transaction %q arrived while transaction %q is open: two writers interleave in this partition (contract violation); both transactions are incomplete and must be dead-lettered", ev.txnID, open.id)
		ps.poison(ev.txnID, reason)
		e.err = flagErr(partition, open.id, "field %q: %s%s", p.txnField, reason, suffix(dataErr))
		e.reason = "violation"
		p.m.violations.Incr(1)
		w.emit(msg, e)
		return
	}
	if open.poison != "" && e.err == nil {
		e.err = flagErr(partition, open.id, "field %q: transaction is incomplete: %s", p.txnField, open.poison)
		e.reason = "incomplete"
	}
	if isEnd {
		e.meta.TxnEnd = true
		ps.unpoison(open.id)
		ps.open = nil
		p.m.ended.Incr(1)
	}
	w.emit(msg, e)
}

func suffix(err error) string {
	if err == nil {
		return ""
	}
	return "; also: " + err.Error()
}

func (p *Processor) end(w *writer, ps *partState, msg *service.Message, partition string, ev event, off int64) {
	switch {
	case ps.open == nil:
		p.m.dropped.Incr(1, "end")
	case ps.open.id != ev.txnID:
		// An END of a transaction that is not open (a duplicate, or the END
		// of an aborted or interleaved one) ends nothing. Rows of an
		// interleaved transaction were flagged already.
		p.m.dropped.Incr(1, "end")
		p.m.violations.Incr(1)
		p.log.Warnf("txn_assembler: partition %q: END of transaction %q dropped while transaction %q is open", partition, ev.txnID, ps.open.id)
	default:
		open := ps.open
		e := emission{meta: contract.Meta{
			Partition: partition, TxnID: open.id, TxnEnd: true, Marker: true,
			HasOffset: true, SourceOffset: off,
		}}
		if open.poison != "" {
			e.err = flagErr(partition, open.id, "field %q: transaction is incomplete: %s", p.txnField, open.poison)
			e.reason = "incomplete"
		}
		ps.unpoison(open.id)
		ps.open = nil
		p.m.ended.Incr(1)
		w.emit(msg, e)
	}
}

func (p *Processor) abort(w *writer, ps *partState, msg *service.Message, partition string, ev event, off int64) {
	switch {
	case ps.open == nil:
		p.m.dropped.Incr(1, "abort")
	case ev.txnID != "" && ps.open.id != ev.txnID:
		p.m.dropped.Incr(1, "abort")
		p.m.violations.Incr(1)
		p.log.Warnf("txn_assembler: partition %q: abort of transaction %q dropped while transaction %q is open", partition, ev.txnID, ps.open.id)
	default:
		old := ps.open.id
		ps.unpoison(old)
		ps.open = nil
		p.m.aborted.Incr(1)
		w.emit(msg, emission{meta: contract.Meta{
			Partition: partition, TxnID: old, TxnAbort: true, Marker: true,
			HasOffset: true, SourceOffset: off,
		}})
	}
}

// bad flags a message that cannot take part in the state machine (it cannot
// be parsed, has an unknown type or lacks its transaction id).
func (p *Processor) bad(w *writer, ps *partState, msg *service.Message, partition string, ev event, off int64, hasOff bool, cause error, reason string) {
	e := emission{
		meta:     contract.Meta{Partition: partition, HasOffset: hasOff, SourceOffset: off},
		keepBody: true,
		reason:   reason,
	}
	switch {
	case ps.open != nil:
		// Attributed to the open transaction, which the output then
		// dead-letters whole.
		e.meta.TxnID = ps.open.id
		if ev.txnID != "" && ev.txnID != ps.open.id {
			ps.poison(ev.txnID, fmt.Sprintf("a bad message of this transaction was flagged under transaction %q", ps.open.id))
		}
		if ev.kind == kindEnd && ev.txnID == "" {
			// An END without an id still ends the open transaction, flagged.
			e.meta.TxnEnd, e.meta.Marker = true, true
			ps.open = nil
		}
	case ev.txnID != "":
		// Its own one-message transaction; later rows of that transaction
		// are flagged as incomplete.
		e.meta.TxnID = ev.txnID
		e.meta.TxnEnd = true
		ps.poison(ev.txnID, fmt.Sprintf("an earlier message of this transaction at offset %d was bad (%v)", off, cause))
	default:
		e.meta.TxnID = "invalid@" + strconv.FormatInt(off, 10)
		if !hasOff {
			e.meta.TxnID = "invalid"
		}
		e.meta.TxnEnd = true
		ps.taint = fmt.Sprintf("an unattributable bad message at offset %d preceded it and may have been its first row", off)
	}
	e.err = flagErr(partition, e.meta.TxnID, "%v", cause)
	w.emit(msg, e)
}

// replay flags a message whose offset the partition has already passed. It
// changes no state.
func (p *Processor) replay(w *writer, ps *partState, msg *service.Message, partition string, ev event, decErr error, off int64) {
	if decErr == nil && (ev.kind == kindBegin || ev.kind == kindSkip) {
		p.m.dropped.Incr(1, ev.kind.String())
		return
	}
	txn := ev.txnID
	if txn == "" && ps.open != nil {
		txn = ps.open.id
	}
	if txn == "" {
		txn = "invalid@" + strconv.FormatInt(off, 10)
	}
	e := emission{
		meta:     contract.Meta{Partition: partition, TxnID: txn, HasOffset: true, SourceOffset: off},
		keepBody: true,
		reason:   "replay",
	}
	if decErr == nil {
		switch {
		case ev.kind.isData():
			if t, err := p.target(ev); err == nil {
				e.meta.Database, e.meta.Table = t.database, t.table
				e.body, e.del, e.keepBody = t.rowJSON, t.del, false
			}
		case ev.kind == kindEnd || ev.kind == kindAbort:
			e.meta.Marker = true
		}
	}
	e.err = flagErr(partition, txn, "field %q: source offset %d is at or below offset %d that this partition already passed: a replay (a nacked batch re-processed) or a reorder; it is not applied", p.offsetField(), off, ps.hwm)
	w.emit(msg, e)
}

// offsetField names where source offsets come from, for error messages.
func (p *Processor) offsetField() string {
	if p.sourceOffset != nil {
		return fieldSourceOffset
	}
	return "kafka_offset"
}

// resolvePartition finds the source stream of a message.
func (p *Processor) resolvePartition(batch service.MessageBatch, i int, ev event) (string, error) {
	if p.partition != nil {
		s, err := batch.TryInterpolatedString(i, p.partition)
		if err != nil {
			return "", fmt.Errorf("field %q: interpolation failed: %w", fieldPartition, err)
		}
		if s == "" {
			return "", fmt.Errorf("field %q gave an empty partition", fieldPartition)
		}
		return s, nil
	}
	msg := batch[i]
	topic, hasTopic := msg.MetaGet("kafka_topic")
	part, hasPart := msg.MetaGetMut("kafka_partition")
	if hasTopic && hasPart && topic != "" {
		if n, ok := wholeNumber(part); ok {
			return p.partNames.name(topic, int32(n)), nil
		}
		return topic + "/" + fmt.Sprint(part), nil
	}
	if ev.envPartition != "" {
		return ev.envPartition, nil
	}
	return "", fmt.Errorf("no partition: the message has no kafka_topic and kafka_partition metadata and no envelope partition field; set the %q field", fieldPartition)
}

// resolveOffset finds the source offset of a message; ok is false when the
// source has none (the caller then uses the arrival counter).
func (p *Processor) resolveOffset(batch service.MessageBatch, i int) (int64, bool, error) {
	if p.sourceOffset != nil {
		s, err := batch.TryInterpolatedString(i, p.sourceOffset)
		if err != nil {
			return 0, false, badField(fieldSourceOffset, "interpolation failed: %v", err)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return 0, false, badField(fieldSourceOffset, "must give a whole number, got %q", s)
		}
		return n, true, nil
	}
	v, exists := batch[i].MetaGetMut("kafka_offset")
	if !exists {
		return 0, false, nil
	}
	n, ok := wholeNumber(v)
	if !ok {
		return 0, false, badField("kafka_offset", "metadata must be a whole number, got %v", v)
	}
	return n, true, nil
}

// partitionNames remembers the last few default partition names, so that
// each message does not build its "<topic>/<partition>" again.
type partitionNames struct {
	topic [4]string
	part  [4]int32
	names [4]string
	next  uint8
}

func (c *partitionNames) name(topic string, part int32) string {
	for i := range c.names {
		if c.part[i] == part && c.topic[i] == topic && c.names[i] != "" {
			return c.names[i]
		}
	}
	n := contract.KafkaPartition(topic, part)
	i := c.next % uint8(len(c.names))
	c.topic[i], c.part[i], c.names[i] = topic, part, n
	c.next++
	return n
}

func wholeNumber(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case uint64:
		return int64(x), true
	case float64:
		if x == float64(int64(x)) {
			return int64(x), true
		}
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		return n, err == nil
	}
	return 0, false
}

// target applies table_mapping and database to a data row.
func (p *Processor) target(ev event) (event, error) {
	db, table := ev.database, ev.table
	if table == "" {
		return ev, badField("table", "is missing or empty: a data row needs its source table")
	}
	mappedDB := ""
	if p.tableMapping != nil {
		to, ok := p.tableMapping[db+"."+table]
		if !ok {
			to, ok = p.tableMapping[table]
		}
		if ok {
			if d, t, hasDot := strings.Cut(to, "."); hasDot {
				mappedDB, table = d, t
			} else {
				table = to
			}
		}
	}
	switch {
	case mappedDB != "":
		db = mappedDB
	case p.database != "":
		db = p.database
	}
	if db == "" {
		return ev, badField("database", "is missing or empty for table %q: set the processor's database field or map the table to db.table", table)
	}
	ev.database, ev.table = db, table
	return ev, nil
}
