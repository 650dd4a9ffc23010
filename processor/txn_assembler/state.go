// This file holds the per-partition state: the open source transaction, the
// arrival counter and the poisoned transaction ids.

package txnassembler

// partState is the transaction state of one source partition.
type partState struct {
	hasHWM bool
	hwm    int64
	// open is the open transaction, or nil; it points at txn, which holds
	// it, so that opening one allocates nothing.
	open *openTxn
	txn  openTxn
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

// nextArrival is the per-partition arrival counter used as the source offset
// when the source has none. It starts at 0 with the process, so it is no
// source position: the messages numbered by it are stamped
// contract.Meta.ArrivalOffset.
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
	t := &ps.txn
	*t = openTxn{id: id, poison: ps.poisoned[id]}
	if !explicit && ps.taint != "" && t.poison == "" {
		t.poison = ps.taint
	}
	ps.taint = ""
	ps.open = t
	return t
}
