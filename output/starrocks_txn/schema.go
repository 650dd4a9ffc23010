package starrocks_txn

// Home of G43 (ARCHITECTURE.md §11.1): a transaction needing an unchecked schema waits, with
// only its partition, and loads after the change. Main test:
// TestCoreGatesANewSchemaAndOnlyItsPartition.
//
// Home of G45 (ARCHITECTURE.md §11.1): a transaction stalled on its table or schema heals
// without a restart. Main test: TestCoreSchemaStallHealsWithoutARestart.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
	"github.com/starrocks-txn/benthos-starrocks/output/starrocks_txn/schemasync"
)

// The schema gate (ARCHITECTURE.md §14.3): a row whose schema the output
// has not checked against StarRocks makes its source transaction wait,
// complete, in state gated — with every later transaction of its partition,
// while other partitions go on — until the schema manager
// (output/starrocks_txn/schemasync) has resolved it: the table takes the
// rows, after a change it applied and waited for, or it cannot (the
// transaction is poisoned with the reason). A released transaction is
// loaded only into a StarRocks transaction begun after the change (take).

// schemaNeed is one schema of a transaction's rows the output has not
// checked: a table and what its rows say of their schema.
type schemaNeed struct {
	table string
	ref   schemasync.Ref
}

// same reports whether two needs are the same check.
func (n schemaNeed) same(m schemaNeed) bool {
	return n.table == m.table && n.ref.Typed == m.ref.Typed && n.ref.Change == m.ref.Change && n.ref.Keys == m.ref.Keys
}

// schemaRef is what an admitted message says of its table's schema, and
// whether it says anything: an explicit change, the source table of a
// typed row, or the hash of an untyped row's keys.
func (it *item) schemaRef() (schemasync.Ref, bool) {
	switch {
	case it.change != nil:
		return schemasync.Ref{Change: it.change}, true
	case !it.isRow || it.poison != nil:
		return schemasync.Ref{}, false
	case it.schema != nil:
		return schemasync.Ref{Typed: it.schema}, true
	case it.keys != 0:
		return schemasync.Ref{Keys: it.keys}, true
	}
	return schemasync.Ref{}, false
}

// knownCache is the last schema the book said it knows: rows of one table
// and schema come in runs, so most rows cost a compare, not a lookup
// under the book's lock.
type knownCache struct {
	db, table     string
	typed, change *schema.Table
	keys          uint64
	gen           uint64
	set           bool
}

// known asks the book whether a row's schema was checked, through the cache.
func (k *core) known(db, table string, ref schemasync.Ref) bool {
	c := &k.knownLast
	gen := k.schemas.Gen()
	if c.set && c.gen == gen && c.db == db && c.table == table && c.typed == ref.Typed && c.change == ref.Change && c.keys == ref.Keys {
		return true
	}
	if !k.schemas.Known(db, table, ref) {
		return false
	}
	*c = knownCache{db: db, table: table, typed: ref.Typed, change: ref.Change, keys: ref.Keys, gen: gen, set: true}
	return true
}

// noteNeed records, for the transaction a message joined, a schema of its
// rows the book has not checked (the fast path: a compare, or a map
// lookup).
func (k *core) noteNeed(t *srcTxn, it *item) {
	if k.schemas == nil {
		return
	}
	t.checkedSeq = k.readySeq
	ref, ok := it.schemaRef()
	if !ok || k.known(it.db, it.table, ref) {
		return
	}
	n := schemaNeed{table: it.table, ref: ref}
	for _, m := range t.needs {
		if m.same(n) {
			return
		}
	}
	if ref.Keys != 0 {
		// The slow path needs the key names: read once per new hash.
		n.ref.KeyNames = topLevelKeys(it.body)
	}
	t.needs = append(t.needs, n)
}

// gate holds a complete transaction whose rows need a check, or that
// comes after one of its partition (ARCHITECTURE.md §14.3).
func (k *core) gate(p *partition, t *srcTxn) {
	if !k.move(t, txnGated) {
		return
	}
	p.gated = append(p.gated, t)
	if len(p.gated) == 1 {
		k.nextGate(p, p.lastActivity)
	}
}

// popGated drops the partition's first gated transaction, clearing its
// slot: the array behind p.gated would otherwise hold it, and its messages,
// until an append reallocates it.
func (p *partition) popGated() {
	p.gated[0] = nil
	p.gated = p.gated[1:]
}

// nextGate releases the partition's gated transactions in order while
// nothing they need is unchecked, and starts the check of the first one
// that needs some.
func (k *core) nextGate(p *partition, now time.Time) {
	for len(p.gated) > 0 {
		t := p.gated[0]
		if t.state != txnGated {
			p.popGated()
			continue
		}
		t.needs = k.unchecked(t)
		if len(t.needs) > 0 {
			k.fx.resolveSchemas(p, t, t.needs)
			return
		}
		p.popGated()
		k.ungate(p, t, now)
	}
}

// unchecked returns the needs of t the book does not know yet (a change
// for an earlier transaction may have checked them).
func (k *core) unchecked(t *srcTxn) []schemaNeed {
	if k.schemas == nil {
		return nil
	}
	var out []schemaNeed
	for _, n := range t.needs {
		if !k.known(t.db, n.table, n.ref) {
			out = append(out, n)
		}
	}
	return out
}

// ungate lets a checked transaction go on: to the active chunks, or
// skipped when it has no rows (a schema change alone).
func (k *core) ungate(p *partition, t *srcTxn, now time.Time) {
	if len(t.tables) == 0 {
		k.move(t, txnSkipped)
		return
	}
	if !k.move(t, txnActive) {
		return
	}
	// Its rows' schemas were known, or checked, as of now (notBefore).
	t.checkedSeq = k.readySeq
	p.active = append(p.active, t)
	if now.Sub(p.lastSwitch) >= k.conf.miniInterval() {
		k.switchPartition(p, now)
	}
}

// schemasResolved applies the schema manager's verdict on the gated
// transaction t: on success it goes on, loaded only into a StarRocks
// transaction begun after readyAt; on failure it is poisoned with the
// reason (dead_letter, or a stall that is tried again). A verdict on a
// transaction a fence or a stall took meanwhile changes nothing.
func (k *core) schemasResolved(p *partition, t *srcTxn, readyAt time.Time, err error, now time.Time) {
	if k.parts[p.key] != p || len(p.gated) == 0 || p.gated[0] != t || t.state != txnGated {
		return
	}
	if err != nil && schemasync.IsTransient(err) {
		// StarRocks did not answer the check: it says nothing of the rows.
		// The transaction stays first in line and its check is started
		// again after a backoff; nothing is poisoned for it.
		delay := min(k.conf.retryInitial<<min(p.checkRetries, 16), k.conf.retryMax)
		p.checkRetries++
		p.checkRetryAt = now.Add(delay)
		k.fx.logf(logWarn, p.key.String(), "Checking the schema of source transaction %q: %v; trying again in %v (its partition waits)", t.id, err, delay)
		return
	}
	p.checkRetries, p.checkRetryAt = 0, time.Time{}
	p.popGated()
	if err != nil {
		t.poison = fmt.Errorf("source transaction %q: %w", t.id, err)
		t.schemaStall = true
		// Its successors wait behind it: the poison moves them (a stall)
		// or leaves them gated (dead_letter), and the next is checked.
		rest := p.gated
		p.gated = nil
		k.poison(t)
		if p.stalled == nil {
			p.gated = rest
			k.nextGate(p, now)
		}
		return
	}
	if readyAt.After(t.notBefore) {
		t.notBefore = readyAt
	}
	if !readyAt.IsZero() {
		for _, n := range t.needs {
			k.noteReady(t.db, n.table, readyAt)
		}
	}
	t.needs = nil
	k.ungate(p, t, now)
	k.nextGate(p, now)
}

// tableReadiness is when the columns of a database's tables were last
// seen to change (a change applied, or a read showing other columns than
// the last): StarRocks plans a table's load in a transaction at its first
// load there, so rows of such a table go only into a cycle begun after it,
// whichever transaction's check saw the change — one on another partition,
// a schema-change transaction without rows (Maxwell's DDL), a change
// another writer made (ARCHITECTURE.md §14.3).
//
// Only a transaction whose schemas were known or checked after a change
// was noted (srcTxn.checkedSeq) may need it: one known before fits the
// columns StarRocks held then, which a cycle begun before the change holds
// too.
type tableReadiness struct {
	at     map[string][]readyEvent
	latest time.Time
}

// readyEvent is one change of a table's columns: when it became visible,
// and its number in the core's sequence of such notes (core.readySeq).
type readyEvent struct {
	at  time.Time
	seq uint64
}

// noteReady records that db.table's columns changed at readyAt.
func (k *core) noteReady(db, table string, readyAt time.Time) {
	if k.schemaReady == nil {
		k.schemaReady = map[string]*tableReadiness{}
	}
	r := k.schemaReady[db]
	if r == nil {
		r = &tableReadiness{at: map[string][]readyEvent{}}
		k.schemaReady[db] = r
	}
	k.readySeq++
	r.at[table] = append(r.at[table], readyEvent{at: readyAt, seq: k.readySeq})
	if readyAt.After(r.latest) {
		r.latest = readyAt
	}
}

// notBefore returns when the last change of a table of t that t's schema
// check may depend on became visible, at least t.notBefore: t goes only
// into a cycle begun after it. A cycle begun after every change of its
// database forgets them.
func (k *core) notBefore(t *srcTxn, begun time.Time) time.Time {
	r := k.schemaReady[t.db]
	if r == nil {
		return t.notBefore
	}
	if begun.After(r.latest) {
		delete(k.schemaReady, t.db)
		return t.notBefore
	}
	nb := t.notBefore
	for _, table := range t.tables {
		for _, ev := range r.at[table] {
			if ev.seq <= t.checkedSeq && ev.at.After(nb) {
				nb = ev.at
			}
		}
	}
	return nb
}

// retryStalls gives a partition stalled by its schema or its table another
// try every stall_retry_interval (ARCHITECTURE.md §14.4): the stalled
// transaction and those behind it are gated again, checked afresh (the
// book forgets the table, so its columns are read again), and go on once
// StarRocks takes them; the messages held behind the stall are applied.
func (k *core) retryStalls(now time.Time) {
	if k.schemas != nil {
		k.schemas.Expire()
	}
	for _, p := range k.parts {
		if !p.checkRetryAt.IsZero() && !now.Before(p.checkRetryAt) {
			p.checkRetryAt = time.Time{}
			k.nextGate(p, now)
		}
	}
	for _, p := range k.parts {
		if p.stalled == nil || !p.stallRetry {
			continue
		}
		if p.stallRetryAt.IsZero() {
			p.stallRetryAt = now.Add(k.conf.stallRetryInterval)
			continue
		}
		if now.Before(p.stallRetryAt) {
			continue
		}
		var again []*srcTxn
		blocked := false
		for _, t := range p.order {
			if t.state == txnStalled {
				if t.inCommit {
					blocked = true
					break
				}
				again = append(again, t)
			}
		}
		if blocked {
			p.stallRetryAt = now.Add(k.conf.stallRetryInterval)
			continue
		}
		k.fx.logf(logInfo, p.key.String(), "Trying stalled source transaction %q again: %v", p.stalledTxn, p.stalled)
		if k.schemas != nil && len(again) > 0 {
			for _, tbl := range again[0].tables {
				k.schemas.Invalidate(again[0].db, tbl)
			}
		}
		p.stalled, p.stalledTxn, p.stallRetry = nil, "", false
		k.fx.gauge(gaugeStalledPartition, 0, partitionLabel(p))
		for _, t := range again {
			t.poison, t.schemaStall = nil, false
			if k.move(t, txnGated) {
				p.gated = append(p.gated, t)
			}
		}
		held := p.held
		p.held = nil
		k.nextGate(p, now)
		for _, it := range held {
			k.apply(it, now)
		}
	}
}

// resolveSchemas is the effect that runs the schema manager for a gated
// transaction's needs, outside Output.mu, and hands the verdict back.
func (o *Output) resolveSchemas(p *partition, t *srcTxn, needs []schemaNeed) {
	db := t.db
	needs = append([]schemaNeed(nil), needs...)
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		var readyAt time.Time
		var err error
		for _, n := range needs {
			v := o.schemas.Resolve(o.ctx, db, n.table, n.ref)
			if v.Err != nil {
				err = v.Err
				break
			}
			if v.ReadyAt.After(readyAt) {
				readyAt = v.ReadyAt
			}
		}
		if errors.Is(err, context.Canceled) && o.closing() {
			return
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		o.core.schemasResolved(p, t, readyAt, err, o.now())
	}()
}

// parseChange reads a schema change's body: a table definition
// (contract.KeySchemaChange).
func parseChange(body []byte) (*schema.Table, error) {
	var t schema.Table
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("reading the table definition of a schema change: %w", err)
	}
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("the table definition of a schema change: %w", err)
	}
	return &t, nil
}

// topLevelKeys returns the names of a JSON object's top-level keys, for
// the check of a new key set (noteNeed; once per new hash).
func topLevelKeys(body []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return keys
		}
		if name, ok := tok.(string); ok {
			keys = append(keys, name)
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return keys
		}
	}
	return keys
}

// enableSchemas starts checking the rows' schemas against StarRocks when
// the configuration asks for it and mysql_address is set
// (ARCHITECTURE.md §14.2).
func (o *Output) enableSchemas(meta schemasync.Meta, m *service.Metrics) {
	if o.conf.schemaMode == "" || meta == nil {
		if o.conf.schemaMode == schemasync.ModeIgnore {
			o.log.Warnf("schema_evolution: ignore without mysql_address: StarRocks drops the fields a table has no column for, and the output cannot see or count them")
		}
		return
	}
	mode, err := schemasync.ParseMode(o.conf.schemaMode)
	if err != nil {
		return
	}
	o.schemas = schemasync.New(meta, schemasync.Config{
		Mode: mode, CreateProperties: o.conf.createTableProps, Log: o.log, Metrics: m, Now: o.now,
		Recheck: o.conf.stallRetryInterval,
	})
	o.mu.Lock()
	o.core.schemas = o.schemas
	o.mu.Unlock()
}
