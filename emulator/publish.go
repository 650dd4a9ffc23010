package emulator

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// The publish order (docs/notes/starrocks-protocol.md §4.7): StarRocks
// makes a table's committed transactions visible one after the other, in
// commit order — a transaction waits until every transaction committed
// before it on one of its tables is visible (the FE's transaction graph
// by table ids; the partition's visible version one below the commit
// version). A commit's reply waits for its visibility for a bounded time;
// past it the transaction stays COMMITTED, becomes visible in its turn,
// and the reply says so in the words of the path that committed it
// (publishWait).
//
// In the emulator a commit applies its rows at once unless a transaction
// committed before it on one of its tables is still waiting for its
// publish (ActCommitLate, or a commit held behind one). The order is per
// table, not per partition: stricter than StarRocks's older publish
// mechanism, which orders the versions of each partition only.

// publishOrder hands out commit-order tickets and tracks the committed
// transactions not yet applied. Lock order: Emulator.mu before
// publishOrder.mu, never the reverse.
type publishOrder struct {
	mu      sync.Mutex
	next    int64
	pending map[int64]*pubEntry // by ticket: committed, not yet applied
}

type pubEntry struct {
	tables []string      // db.table of every table the transaction writes
	done   chan struct{} // closed once the transaction is applied (or failed to)
}

func tablesOf(changes []storeChanges) []string {
	keys := make([]string, 0, len(changes))
	for _, c := range changes {
		keys = append(keys, c.DB+"."+c.Table)
	}
	return keys
}

// enterLocked gives t its place in the commit order: called, under
// Emulator.mu, where t becomes COMMITTED (or a multi task COMMITTING), so
// that the order is the order of the commits. Once per transaction.
func (e *Emulator) enterLocked(t *txn, changes []storeChanges) {
	p := &e.pub
	p.mu.Lock()
	defer p.mu.Unlock()
	if t.pubTicket != 0 {
		return
	}
	if p.pending == nil {
		p.pending = map[int64]*pubEntry{}
	}
	p.next++
	t.pubTicket = p.next
	p.pending[p.next] = &pubEntry{tables: tablesOf(changes), done: make(chan struct{})}
}

// before returns the done channels of the transactions committed before
// ticket on one of its tables and not yet applied. The set only shrinks:
// a later commit never goes before.
func (p *publishOrder) before(ticket int64) []chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	mine := p.pending[ticket]
	if mine == nil {
		return nil
	}
	var out []chan struct{}
	for other, x := range p.pending {
		if other < ticket && sharesTable(x.tables, mine.tables) {
			out = append(out, x.done)
		}
	}
	return out
}

func sharesTable(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}

// wait blocks until every transaction committed before ticket on one of
// its tables is applied; it reports whether it waited for any.
func (p *publishOrder) wait(ticket int64) (held bool) {
	for _, ch := range p.before(ticket) {
		held = true
		<-ch
	}
	return held
}

// leave ends the turn of ticket: what waits behind it may go.
func (p *publishOrder) leave(ticket int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if x := p.pending[ticket]; x != nil {
		close(x.done)
		delete(p.pending, ticket)
	}
}

// publishWait is how long a commit's reply waits for the transaction to
// become visible, and what it answers when that time passes first (the
// transaction stays COMMITTED and is applied in its turn). It depends on
// the path that committed (§4.7 of the facts): the FE's commit of a
// PREPARED transaction, the BE's commit, a plain stream load, a
// multi-statement task.
type publishWait struct {
	bound time.Duration
	// timedOut is the reply once bound passed, built when it is sent.
	timedOut func() reply
	// committedLocked, if set, runs under Emulator.mu when bound passed
	// and the transaction is still not applied (a multi task is COMMITTED
	// from then on).
	committedLocked func()
}

// Publish waits of StarRocks (docs/notes/starrocks-protocol.md §4.7).
const (
	// fePublishWait is the FE's wait for a PREPARED transaction's
	// visibility when the commit has no `timeout` header
	// (TransactionLoadAction's DEFAULT_TXN_TIMEOUT_MILLIS).
	fePublishWait = 20 * time.Second
	// multiPublishWait is the session's transaction_visible_wait_timeout
	// (default 10 s), which a multi-statement commit waits.
	multiPublishWait = 10 * time.Second
)

// fePreparedWait is the publish wait of the FE's commit of a PREPARED
// transaction: the request's `timeout`, 20 s without one; past it the FE
// throws "publish timeout: <ms>".
func (e *Emulator) fePreparedWait(q *req) publishWait {
	d := q.timeout
	if d <= 0 {
		d = fePublishWait
	}
	return publishWait{bound: d, timedOut: func() reply {
		return e.feFailed(fmt.Sprintf("publish timeout: %d", d.Milliseconds()))
	}}
}

// beCommitWait is the publish wait of a commit that goes through the BE
// (a classic commit without prepare, a plain stream load): the FE waits 3/4
// of the commit RPC's timeout (at least 3/16 of the transaction's), then
// answers PUBLISH_TIMEOUT, and the BE polls the state until the
// transaction's load deadline (begin + timeout). Past both, the reply
// carries PUBLISH_TIMEOUT and the FE's text with its debug information.
func (e *Emulator) beCommitWait(t *txn, changes []storeChanges, shape func(msg string) reply) publishWait {
	e.mu.Lock()
	left := t.created.Add(t.timeout).Sub(e.now())
	e.mu.Unlock()
	d := max(left, t.timeout*3/16)
	return publishWait{bound: d, timedOut: func() reply {
		return shape("Publish timeout. The data will be visible after a while" + e.notPublishedInfo(changes))
	}}
}

// notPublishedInfo is TransactionState.getPublishTimeoutDebugInfo of a
// transaction that waits for earlier ones of its tables.
func (e *Emulator) notPublishedInfo(changes []storeChanges) string {
	ids := make([]string, 0, len(changes))
	for _, c := range changes {
		if s, err := e.store.Table(c.DB, c.Table); err == nil {
			ids = append(ids, fmt.Sprint(s.ID))
		}
	}
	sort.Strings(ids)
	return "txn has not sent publish tasks yet, maybe waiting previous txns on the same table(s) to finish, tableIds: " + strings.Join(ids, ",")
}

// multiWait is the publish wait of a multi-statement commit: past the
// session's transaction_visible_wait_timeout the commit answers OK and the
// task is COMMITTED until its turn makes it visible.
func (e *Emulator) multiWait(t *txn, ok reply) publishWait {
	return publishWait{bound: multiPublishWait, timedOut: func() reply { return ok },
		committedLocked: func() {
			if t.state == stateCommitting {
				t.state = stateCommitted
			}
		}}
}

// publish applies t in its turn. When no transaction committed before it
// on its tables is pending, it applies at once; else it waits for them, in
// the background, and publish returns when t is applied (inTime) or when
// w.bound passed first (t is applied later, in its turn) — or when the
// request's client went away, which ends the wait as the bound does, so a
// handler never outlives what it answers. (A stop applies the held commits
// at once: Close cuts the late commits' delays short.)
func (e *Emulator) publish(ctx context.Context, t *txn, changes []storeChanges, w publishWait) (err error, inTime bool) {
	if len(e.pub.before(t.pubTicket)) == 0 {
		return e.completeCommit(t, changes), true
	}
	done := make(chan error, 1)
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		done <- e.completeCommit(t, changes)
	}()
	timer := time.NewTimer(w.bound)
	defer timer.Stop()
	select {
	case err := <-done:
		return err, true
	case <-timer.C:
	case <-ctx.Done():
	}
	if w.committedLocked != nil {
		e.mu.Lock()
		w.committedLocked()
		e.mu.Unlock()
	}
	return nil, false
}
