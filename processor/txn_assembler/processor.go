// Package txnassembler provides the txn_assembler processor: it recognises
// where the source transactions of CDC events begin and end, per source
// partition, and stamps the metadata contract (internal/contract) that the
// starrocks_txn output uses to commit whole source transactions atomically.
//
// The processor only annotates and filters: exactly one batch comes out per
// batch in, because Benthos acks a processor's dropped batches at once and
// blocks a pipeline thread on split ones (docs/notes/benthos-semantics.md §0).
package txnassembler

// Home of G65 (ARCHITECTURE.md §11.4): replays and ended assignments change nothing; a fence
// resets the partition. Main test: TestReplayedOffsetsAreFlaggedAndChangeNoState.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

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

	// placed refuses the calls of a processor placed under
	// pipeline.processors in a pool of threads (nil elsewhere).
	placed   *placementGuard
	inFlight atomic.Bool

	mu  sync.Mutex
	seq int64
	// seen finds messages that occur twice in one batch (distinct).
	seen   map[*service.Message]struct{}
	parts  map[string]*partState
	closed bool
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
	if p.placed != nil {
		// Under pipeline.processors: refused, from the first call, in a
		// pool of threads (placement.go).
		if err := p.placed.admit(ctx); err != nil {
			return []service.MessageBatch{failed(batch, err)}, nil
		}
	}
	if !p.inFlight.CompareAndSwap(false, true) {
		// Not under the mutex: reported at once.
		p.m.errored.c.Incr(int64(len(batch)), reasonConcurrentCall)
		p.log.Errorf("%v", ErrConcurrentCalls)
		return []service.MessageBatch{failed(batch, ErrConcurrentCalls)}, nil
	}
	defer p.inFlight.Store(false)

	p.mu.Lock()
	defer p.mu.Unlock()
	defer p.m.flush()
	w := &writer{p: p, out: make(service.MessageBatch, 0, len(batch))}
	batch = p.distinct(batch)
	for i := range batch {
		n := len(w.out)
		p.processOne(w, batch, i)
		if len(w.out) == n {
			releaseFetch(batch[i])
		}
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

// releaseFetch gives a message the processor dropped (a BEGIN, an event
// that changes nothing) a copy of its body. The input keeps the message
// until its batch is acknowledged, and its body may point into the whole
// decompressed Kafka fetch it came with (franz-go's records point into it),
// which it would keep in memory until then, long after every other record
// of the fetch was rebuilt as a row (docs/benchmark.md, "Memory in
// flight"). The body itself is kept: a batch Benthos replays after a nack
// comes through again with the same messages, and a dropped BEGIN must be
// recognised again.
func releaseFetch(msg *service.Message) {
	if b, err := msg.AsBytes(); err == nil && len(b) > 0 {
		msg.SetBytes(bytes.Clone(b))
	}
}

// failed returns copies of batch's messages, each with err.
func failed(batch service.MessageBatch, err error) service.MessageBatch {
	out := make(service.MessageBatch, len(batch))
	for i, msg := range batch {
		out[i] = msg.Copy()
		out[i].SetError(err)
	}
	return out
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
	w.arrival = false

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
			reason:   reasonPartition,
		})
		return
	}
	if w.hasEpoch && p.reg.Stale(partition, epoch) {
		// A late message of a revoked assignment: the fence reset the
		// partition, and its new owner reads the message again. Dropping it
		// keeps it from corrupting the reset state; its acknowledgement is
		// ignored by the input.
		p.m.dropped.incrLabel(dropStaleEpoch)
		w.stale++
		return
	}
	ps := p.state(partition)

	off, hasOff, err := p.resolveOffset(batch, i)
	if err != nil {
		p.bad(w, ps, msg, partition, ev, 0, false, err, reasonOffset)
		return
	}
	if epochErr != nil {
		p.bad(w, ps, msg, partition, ev, off, hasOff, epochErr, reasonEpoch)
		return
	}
	if !hasOff {
		// No source position: the arrival counter orders the partition's
		// messages of this run, and the contract says it is one
		// (contract.Meta.ArrivalOffset), so exactly_once never takes it
		// for a position.
		off, w.arrival = ps.nextArrival(), true
	}
	switch {
	case ev.bootstrap:
		ev.txnID = "bootstrap@" + strconv.FormatInt(off, 10)
	case ev.ddl:
		ev.txnID = "ddl@" + strconv.FormatInt(off, 10)
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
		p.bad(w, ps, msg, partition, ev, off, true, decErr, reasonBadInput)
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
		p.skip(partition, ev)
	}
}

// skip counts a dropped event (a maxwell DDL that changes no table is
// also logged, at debug level).
func (p *Processor) skip(partition string, ev event) {
	if ev.drop == "" {
		p.m.dropped.incrLabel(dropSkip)
		return
	}
	p.m.dropped.incrLabel(ev.drop)
	if ev.note != "" {
		p.log.Debugf("txn_assembler: partition %q: %s", partition, ev.note)
	}
}
