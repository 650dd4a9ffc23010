package emulator

import "sync"

// publishOrder makes committed transactions visible in commit order on
// each table, as StarRocks publishes a partition's versions one after the
// other (a version waits until the partition's visible version is the one
// before it): a transaction committed after another that is still
// publishing (ActCommitLate) is applied after it, never before.
type publishOrder struct {
	mu      sync.Mutex
	cond    *sync.Cond
	next    int64
	pending map[int64][]string // ticket → db.table keys, committed not applied
}

func tablesOf(changes []storeChanges) []string {
	keys := make([]string, 0, len(changes))
	for _, c := range changes {
		keys = append(keys, c.DB+"."+c.Table)
	}
	return keys
}

// enter takes t's place in the order (once).
func (p *publishOrder) enter(t *txn, changes []storeChanges) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t.pubTicket != 0 {
		return
	}
	if p.pending == nil {
		p.pending = map[int64][]string{}
		p.cond = sync.NewCond(&p.mu)
	}
	p.next++
	t.pubTicket = p.next
	p.pending[p.next] = tablesOf(changes)
}

// wait blocks until no transaction committed before t on one of its tables
// is still unapplied.
func (p *publishOrder) wait(t *txn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.blockedLocked(t.pubTicket) {
		p.cond.Wait()
	}
}

func (p *publishOrder) blockedLocked(ticket int64) bool {
	mine := p.pending[ticket]
	for other, keys := range p.pending {
		if other >= ticket {
			continue
		}
		for _, k := range keys {
			for _, m := range mine {
				if k == m {
					return true
				}
			}
		}
	}
	return false
}

// leave ends t's turn.
func (p *publishOrder) leave(t *txn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.pending, t.pubTicket)
	p.cond.Broadcast()
}
