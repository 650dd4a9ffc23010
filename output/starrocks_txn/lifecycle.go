package starrocks_txn

// Home of G28 (ARCHITECTURE.md §11.1): committed-through is the END offset of the resolved
// prefix, never published after a fence ended. Main test:
// TestCoreCommittedThroughFollowsTheResolvedPrefix.

import (
	"fmt"
	"slices"
	"time"
)

// The lifecycle of a source transaction.
//
// A source transaction (srcTxn) is in exactly one of the states below, and
// move is the only code that changes it. move also keeps the two
// output-wide counters admission decides on — buffered, the bytes of rows a
// commit may still need, and committable, the transactions a commit cycle can
// still commit — and acknowledges the transaction's messages once it is over.
//
//	         END, with rows       switch           take            commit
//	open ────────────────► active ───────► queued ───────► in cycle ───────► committed
//	 │                       ▲
//	 │ a new schema          │ StarRocks takes its rows
//	 └──────────────► gated ─┘ (a change applied, or none needed; without rows: skipped)
//	 │                                                                        ▲    ▲
//	 │ END without rows, abort marker,                                        │    │
//	 │ or StarRocks holds it already (exactly_once)                           │    │
//	 └──────────────────────────────────────────────► skipped                 │    │
//	                                                                          │    │
//	open | active | queued | in cycle ──► poisoned ──► dead-lettered          │    │
//	                                      (dead_letter set)                   │    │
//	open | active | queued | in cycle ──► stalled ────────────────────────────┘ (*)│
//	                                      (no dead_letter, or behind the stall;    │
//	                                      never the partition's open transaction:  │
//	                                      it stays open, its rest held; stall)     │
//	any state not over, but fenced ──► fenced ─────────────────────────────────────┘ (*)
//	                                     ├──► released
//	                                     └──► dead-lettered (it was poisoned and its
//	                                                         write ended first)
//
//	(*) only while a commit that holds it is in flight (srcTxn.inCommit), which
//	    also keeps a fenced transaction from being released; so does its
//	    write to dead_letter (srcTxn.inDeadLetter), after which it is
//	    dead-lettered.
//
// States and what they hold:
//
//   - open: receiving its messages (the partition's open transaction), or
//     complete and being placed within one admission step.
//   - gated: complete, held before it may be frozen because a row of it (or
//     of an earlier gated transaction of its partition) has a schema the
//     output has not checked against StarRocks yet (partition.gated;
//     schema.go, ARCHITECTURE.md §14.3). Live, not committable.
//   - active: complete, in its partition's active chunks (partition.active).
//   - queued: frozen by a switch, in its database worker's queue.
//   - in cycle: taken into a commit cycle (cycle.txns).
//   - poisoned: on its way to dead_letter (its partition's lane, core.dlLanes).
//   - stalled: poisoned without dead_letter, or a later complete
//     transaction of the partition held behind the one that stalled it,
//     until a fence or, for a stall on a table or schema, until it is tried
//     again (gated). The partition's open transaction is not stalled: it
//     stays open while the rest of its messages are held (partition.go:
//     stall).
//   - fenced: a fence took it; it is released once no commit holding it is
//     in flight (partition.go, fence.go).
//   - committed, skipped, dead-lettered: over and resolved: the partition's
//     committed-through offset may pass it.
//   - released: over, not resolved: a fence gave it back to the partition's
//     next owner, who reads it again.
//
// Live states (open, active, queued, in cycle) count their bytes in
// core.buffered; committable states (active, queued, in cycle) count in
// core.committable; leaving them subtracts. Entering a state that is over
// acknowledges the transaction's messages; entering a resolved one publishes
// the partition's committed-through offset (advance).
//
// "A commit is in flight" (srcTxn.inCommit) is not a state but a marker
// beside it: a commit request cannot be called back, so while it is in
// flight a fence, or a stall caused in another database, must still be able
// to take the transaction, and the commit's outcome must still be applied to
// it afterwards (fenced or stalled → committed). Folding the marker into the
// states would double every state a commit can be in flight in.
type txnState uint8

const (
	txnOpen txnState = iota
	txnGated
	txnActive
	txnQueued
	txnInCycle
	txnPoisoned
	txnStalled
	txnFenced
	txnCommitted
	txnSkipped
	txnDeadLettered
	txnReleased
	numTxnStates
)

var txnStateNames = [numTxnStates]string{
	txnOpen: "open", txnGated: "gated", txnActive: "active", txnQueued: "queued", txnInCycle: "in cycle",
	txnPoisoned: "poisoned", txnStalled: "stalled", txnFenced: "fenced",
	txnCommitted: "committed", txnSkipped: "skipped", txnDeadLettered: "dead-lettered", txnReleased: "released",
}

func (s txnState) String() string {
	if s < numTxnStates {
		return txnStateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// live reports whether the transaction's rows count in core.buffered: a
// commit may still load them (open, gated, active, queued, in cycle).
func (s txnState) live() bool { return s <= txnInCycle }

// committable reports whether the transaction counts in core.committable:
// complete, and a commit cycle can still commit it.
func (s txnState) committable() bool { return s >= txnActive && s <= txnInCycle }

// over reports whether the transaction's fate is decided and its messages
// acknowledged.
func (s txnState) over() bool { return s >= txnCommitted }

// resolved reports whether the transaction no longer holds back its
// partition's committed-through offset.
func (s txnState) resolved() bool {
	return s == txnCommitted || s == txnSkipped || s == txnDeadLettered
}

// canMove reports whether from → to is a transition of the lifecycle.
// inCommit is whether a commit request holding the transaction is in flight,
// inDeadLetter whether its write to dead_letter is (a poisoned one only):
// each marker allows only its own edges, so a fenced transaction held by a
// dead-letter write is never committed, and one never poisoned is never
// dead-lettered.
func canMove(from, to txnState, inCommit, inDeadLetter bool) bool {
	switch to {
	case txnGated:
		return from == txnOpen || from == txnStalled && !inCommit
	case txnActive:
		return from == txnOpen || from == txnGated
	case txnQueued:
		return from == txnActive
	case txnInCycle:
		return from == txnQueued
	case txnSkipped:
		return from == txnOpen || from == txnGated
	case txnPoisoned, txnStalled:
		return from.live()
	case txnFenced:
		return !from.over() && from != txnFenced
	case txnReleased:
		return from == txnFenced && !inCommit && !inDeadLetter
	case txnCommitted:
		return from == txnInCycle || ((from == txnFenced || from == txnStalled) && inCommit)
	case txnDeadLettered:
		return from == txnPoisoned || (from == txnFenced && inDeadLetter)
	}
	return false
}

// srcTxn is one source transaction of a partition.
type srcTxn struct {
	id    string
	p     *partition
	items []*item
	db    string
	// tables are the tables it has rows for, in the order of their first
	// row, and tableRows the rows of each (rowsOf): a map per transaction
	// would cost more than the transaction's rows in memory.
	tables    []string
	tableRows [][][]byte
	bytes     int64
	poison    error
	t0        time.Time
	// deletes are the tables the transaction deletes from; modelChecked is
	// set once their key models were checked.
	deletes      map[string]bool
	modelChecked bool
	endOffset    int64
	hasEnd       bool
	// unsureEnd is set when a message of it had a malformed
	// starrocks_txn_end or starrocks_txn_abort: the next message naming
	// another transaction ends it (partition.go).
	unsureEnd bool
	// state is where the transaction is in its lifecycle; only move
	// changes it.
	state txnState
	// needs are the schemas of its rows the output has not checked against
	// StarRocks (schema.go): it is gated at its END while there are some.
	needs []schemaNeed
	// notBefore is when a schema change its rows needed became visible in
	// StarRocks: it is loaded only into a StarRocks transaction begun after
	// it (worker.go: take).
	notBefore time.Time
	// checkedSeq is core.readySeq when its rows' schemas were last known
	// or checked (schema.go: notBefore).
	checkedSeq uint64
	// schemaStall is set when it was poisoned for its schema or its table
	// (a change refused, mode error, a missing table): without dead_letter
	// its partition's stall is tried again (ARCHITECTURE.md §14.4).
	schemaStall bool
	// late is set on the transaction of messages that came after
	// sequence_gap_timeout skipped them and could not be applied in order
	// (late.go): later ones of the same transaction join it while it waits
	// for dead_letter.
	late bool
	// inCommit is set while a commit request that holds the transaction is
	// in flight: a fence waits for it, and nothing releases the transaction
	// meanwhile. inDeadLetter is the same for a poisoned transaction's write
	// to dead_letter.
	inCommit     bool
	inDeadLetter bool

	// itemsBuf and tablesBuf are where items and tables start: a usual
	// transaction fits, in the allocation of the transaction itself.
	itemsBuf  [8]*item
	tablesBuf [4]string
	// rowsBuf is where the first tables' rows start, rowsPerTable each
	// (carved by addRow from rowsFree): one or two rows per table are
	// usual, so most transactions need no allocation for their rows.
	rowsBuf  [3 * rowsPerTable][]byte
	rowsFree [][]byte
}

// appendRow adds body to the rows of table.
func (t *srcTxn) appendRow(table string, body []byte) {
	i := slices.Index(t.tables, table)
	if i < 0 {
		var rows [][]byte
		if len(t.rowsFree) >= rowsPerTable {
			// Full slice expression: a table's rows past its room move
			// out, never into the next table's.
			rows, t.rowsFree = t.rowsFree[:0:rowsPerTable], t.rowsFree[rowsPerTable:]
		}
		t.tables = append(t.tables, table)
		t.tableRows = append(t.tableRows, rows)
		i = len(t.tables) - 1
	}
	t.tableRows[i] = append(t.tableRows[i], body)
}

// rowsOf returns the transaction's rows for table, in order.
func (t *srcTxn) rowsOf(table string) [][]byte {
	if i := slices.Index(t.tables, table); i >= 0 {
		return t.tableRows[i]
	}
	return nil
}

// rowsPerTable is the room for rows each of a transaction's first tables
// gets in srcTxn.rowsBuf.
const rowsPerTable = 2

// held reports whether a request that holds the transaction is in flight.
func (t *srcTxn) held() bool { return t.inCommit || t.inDeadLetter }

// newTxn starts a source transaction of p in state open.
func newTxn(p *partition, id string, t0 time.Time) *srcTxn {
	t := &srcTxn{id: id, p: p, t0: t0}
	t.items, t.tables, t.rowsFree = t.itemsBuf[:0], t.tablesBuf[:0], t.rowsBuf[:]
	return t
}

// addRow adds one row to an open transaction and counts its bytes in
// core.buffered: with move, the only code that changes buffered.
func (k *core) addRow(t *srcTxn, it *item) {
	if t.state != txnOpen {
		k.refuse(t, fmt.Errorf("adding a row to source transaction %q of partition %s in state %s", t.id, t.p.key, t.state))
		return
	}
	t.appendRow(it.table, it.body)
	if it.isDelete {
		if t.deletes == nil {
			t.deletes = map[string]bool{}
		}
		t.deletes[it.table] = true
	}
	t.bytes += int64(len(it.body))
	k.buffered += int64(len(it.body))
}

// move moves t to state to: the one place where a transaction changes
// state and the counters follow. It refuses a transition the lifecycle does
// not have (see canMove): the transaction keeps its state, the refusal is
// logged and counted (starrocks_txn_lifecycle_errors), and the caller must
// not act as if the move happened. It reports whether t moved.
func (k *core) move(t *srcTxn, to txnState) bool {
	from := t.state
	if !canMove(from, to, t.inCommit, t.inDeadLetter) {
		k.refuse(t, fmt.Errorf("source transaction %q of partition %s: no transition from %s to %s (commit in flight: %v, dead-letter write in flight: %v)", t.id, t.p.key, from, to, t.inCommit, t.inDeadLetter))
		return false
	}
	switch {
	case from.committable() && !to.committable():
		k.committable--
	case !from.committable() && to.committable():
		k.committable++
	}
	switch {
	case from.live() && !to.live():
		k.buffered -= t.bytes
	case !from.live() && to.live():
		// A stalled transaction tried again (schema.go: retryStalls).
		k.buffered += t.bytes
	}
	t.state = to
	if to.over() {
		for _, it := range t.items {
			k.itemDone(it)
		}
	}
	if to.resolved() {
		k.advance(t.p)
	}
	return true
}

// refuse reports a change the lifecycle does not allow. It never
// happens unless the output has a bug; the transaction stays as it is, which
// at worst holds its messages until a fence or a restart, and never
// acknowledges anything that was not committed.
func (k *core) refuse(t *srcTxn, err error) {
	k.fx.logf(logError, "", "Refused a change of a source transaction: %v; it keeps its state (a bug of the output: please report it)", err)
	k.fx.count(ctrLifecycleErrors, 1, "")
	if k.onLifecycleError != nil {
		k.onLifecycleError(err)
	}
}

// itemDone acknowledges one message: its WriteBatch call returns once
// all of its messages are done.
func (k *core) itemDone(it *item) {
	if it.finished {
		return
	}
	it.finished = true
	it.call.pending--
	if it.call.pending == 0 {
		k.releaseCall(it.call)
		k.fx.callDone(it.call)
	}
}

// releaseCall takes call c out of core.held, once.
func (k *core) releaseCall(c *call) {
	if c.held {
		c.held = false
		k.held--
	}
}

// advance publishes the partition's committed-through offset: the END
// offset of the last transaction of the resolved prefix.
func (k *core) advance(p *partition) {
	n := 0
	var last *srcTxn
	for _, t := range p.order {
		if !t.state.resolved() {
			break
		}
		n++
		if t.hasEnd {
			last = t
		}
	}
	if n == 0 {
		return
	}
	// Cleared first: the array behind p.order would otherwise hold the
	// resolved transactions, and every message in them, until an append
	// reallocates it.
	clear(p.order[:n])
	p.order = p.order[n:]
	if last != nil {
		k.publish(p, last.endOffset)
	}
}

// publish tells the input (internal/registry) that every source
// transaction of p ending at or below end is resolved; a fenced partition
// publishes nothing (its new owner does).
func (k *core) publish(p *partition, end int64) {
	if p.fenced || p.key.partition == noContractPartition {
		return
	}
	if !p.hasPublished || end > p.published {
		p.published, p.hasPublished = end, true
	}
	k.fx.publishCommitted(p.key.partition, end)
}
