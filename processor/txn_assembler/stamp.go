// This file holds the writer that stamps the metadata contract onto each
// emitted message and collects the batch's flagged messages.

package txnassembler

// Home of G64 (ARCHITECTURE.md §11.4): the metadata contract is stamped on every emitted
// message. Main test: TestOutputUnchangedOnGoldenTraffic.

import (
	"fmt"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
)

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
	// arrival is set while the message being processed has no source
	// offset and takes its partition's arrival counter instead: every
	// message emitted for it is stamped contract.Meta.ArrivalOffset.
	arrival bool
}

// emission is one message to emit: src's copy with the given body and
// contract.
type emission struct {
	meta contract.Meta
	// body replaces the source body unless keepBody is set; a marker has an
	// empty body. A body set here is a row this processor built: one JSON
	// object whose __op is 1 exactly when del is set, and whose top-level
	// keys hash to keys; or, with meta.SchemaChange, a table definition.
	body     []byte
	del      bool
	keys     uint64
	keepBody bool
	err      error
	reason   string
}

// setBody makes the event's row, or its table definition, the body to
// emit.
func (e *emission) setBody(ev event) {
	if ev.schema {
		e.body, e.meta.SchemaChange = ev.def, true
		return
	}
	e.body, e.del, e.keys = ev.rowJSON, ev.del, ev.keys
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
		// A table definition is no row: the output never loads it.
		row = e.body != nil && !e.meta.SchemaChange
	}
	p.seq++
	e.meta.HasSeq = true
	e.meta.Seq = p.seq
	e.meta.SeqSource = p.seqSource
	e.meta.HasEpoch, e.meta.Epoch = w.hasEpoch, w.epoch
	e.meta.ArrivalOffset = w.arrival && e.meta.HasOffset
	if row {
		p.cw.WriteRowFacts(msg, e.meta, e.body, contract.RowFacts{Delete: e.del, Keys: e.keys})
	} else {
		p.cw.Write(msg, e.meta)
	}
	if e.err != nil {
		msg.SetError(e.err)
		p.m.errored.incrLabel(e.reason)
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
