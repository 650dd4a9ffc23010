package txnassembler

// Home of G68 (ARCHITECTURE.md §11.4): the input learns where a partition's held records end
// exactly as the decoder decides it. Main test: TestEndDetectorAgreesWithTheDecoder.

import (
	"sync"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
)

// The kafka_txn input delivers whole source transactions when it knows
// where they end: it asks the processor (through the registry) about the
// last records it holds for a partition and keeps the records after the
// last end for a later batch. Then no batch it delivers waits on a record it
// has not delivered, so the output's max_in_flight calls can never all
// wait on transactions whose ends cannot arrive (ARCHITECTURE.md §6).
//
// endDetector answers what the processor's own decoder reads: an event
// decoded without error as an END, a row that ends its transaction
// (maxwell commit: true, a bootstrap row, custom data_end) or an abort. It
// has its own decoder (and scratch space), so the input can ask while the
// processor works; the input asks only about the last records of a
// partition, back to the last end, so the extra decoding is small. Which
// transaction an END ends is the processor's business: one of another
// transaction than the open one (two writers interleaved in a partition)
// ends nothing, and a batch cut after it holds that transaction open until
// its own end, as every batch could before the input cut them.
type endDetector struct {
	mu     sync.Mutex
	decode decoder
}

// registerEnds tells the stream's input where source transactions end,
// when the processor's partitions are the input's (the partition field is
// unset: with it, one Kafka partition may carry several source streams,
// whose ends do not end the others' transactions).
func (p *Processor) registerEnds(format string, custom *customMappings) {
	if p.partition != nil {
		return
	}
	d := &endDetector{}
	fast := &fastDecoder{}
	switch format {
	case formatEnvelope:
		d.decode = fast.envelope
	case formatMaxwell:
		d.decode = fast.maxwell
	default:
		d.decode = custom.decode
	}
	p.reg.SetTxnEnds(registry.EndFunc(d.ends))
}

// ends reports whether msg ends its partition's open source transaction.
func (d *endDetector) ends(msg *service.Message) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	ev, err := d.decode(msg)
	return err == nil && endsTxn(ev.kind)
}

func endsTxn(k eventKind) bool {
	return k == kindEnd || k == kindDataEnd || k == kindAbort
}
