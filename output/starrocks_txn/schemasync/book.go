package schemasync

// Home of G44 (ARCHITECTURE.md §11.1): no value dropped silently: evolve, error and ignore each
// do what they say; no DDL sent blindly twice. Main test:
// TestEvolveWidensAndRefusesWhatItCannot.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// Mode is the output's schema_evolution.
type Mode uint8

const (
	// Evolve applies what a row needs: a new table, new columns, a
	// lossless widening.
	Evolve Mode = iota
	// Error poisons a source transaction whose rows name a table or a
	// column StarRocks lacks.
	Error
	// Ignore loads the rows as they are; StarRocks skips the keys the
	// table lacks, which are counted and warned about once.
	Ignore
)

// Mode names, as the configuration spells them.
const (
	ModeEvolve = "evolve"
	ModeError  = "error"
	ModeIgnore = "ignore"
)

// ParseMode reads a mode's name.
func ParseMode(s string) (Mode, error) {
	switch s {
	case ModeEvolve:
		return Evolve, nil
	case ModeError:
		return Error, nil
	case ModeIgnore:
		return Ignore, nil
	}
	return 0, fmt.Errorf("schema_evolution %q: expected %s, %s or %s", s, ModeEvolve, ModeError, ModeIgnore)
}

func (m Mode) String() string {
	return [...]string{ModeEvolve, ModeError, ModeIgnore}[m]
}

// Meta is what the book asks StarRocks (*starrocks.Meta).
type Meta interface {
	Columns(ctx context.Context, db, table string) (*schema.Table, bool, error)
	ExecDDL(ctx context.Context, db, stmt string) error
	AlterJobs(ctx context.Context, db, table string, limit int) ([]starrocks.AlterJob, error)
}

// Ref is what a row says of its schema (ARCHITECTURE.md §14.1): its source
// table (typed rows), the hash and names of its keys (untyped rows), or an
// explicit change (a table definition in the stream).
type Ref struct {
	Typed *schema.Table
	// Keys is schema.KeysHash of the row's keys; KeyNames the keys, needed
	// only when Known said no.
	Keys     uint64
	KeyNames []string
	// Change is an explicit table definition.
	Change *schema.Table
}

// Verdict is what Resolve decided.
type Verdict struct {
	// ReadyAt is when a change the rows needed became visible in
	// StarRocks: the rows may be loaded only into a transaction begun after
	// it (a transaction begun before keeps the old schema). Zero: no change.
	ReadyAt time.Time
	// Err, when not nil, is why the rows cannot be loaded: it names the
	// table, the columns and what to do. Whatever it says may be fixed in
	// StarRocks by an operator, so a source transaction stalled on it is
	// tried again (ARCHITECTURE.md §14.4).
	Err error
	// Transient marks an Err that says nothing of the rows: StarRocks did
	// not answer the check (a reset connection, a timeout), or a change's
	// outcome could not be settled yet. The check is tried again; the rows
	// are never poisoned for it.
	Transient bool
}

// transient is a Verdict for an error that says nothing of the rows.
func transient(err error) Verdict { return Verdict{Err: transientError{err}, Transient: true} }

// transientError marks an error of a check that says nothing of the rows.
type transientError struct{ error }

func (e transientError) Unwrap() error { return e.error }

// IsTransient reports whether err is a Verdict's Err that says nothing of
// the rows (Verdict.Transient): the check is to be tried again.
func IsTransient(err error) bool {
	var te transientError
	return errors.As(err, &te)
}

// Config configures a book.
type Config struct {
	Mode Mode
	// CreateProperties are the PROPERTIES of the tables Evolve creates.
	CreateProperties map[string]string
	// PollMin and PollMax bound the interval between two polls of a
	// schema-change job (doubling from PollMin).
	PollMin, PollMax time.Duration
	// ReportEvery is how often a wait for a job is logged.
	ReportEvery time.Duration
	// Recheck is how long a checked schema stays known without reading
	// the table again (default 30 s; negative: until Invalidate): an
	// operator may drop a column
	// or recreate the table, and a JSON load drops a field the table lacks
	// without an error, so only a read notices.
	Recheck time.Duration
	Log     *service.Logger
	Metrics *service.Metrics
	Now     func() time.Time
}

// Book is the schema state of the output's tables.
type Book struct {
	meta Meta
	conf Config
	m    metrics

	mu     sync.Mutex
	tables map[tableKey]*tableState
	// gen counts the times what is known was forgotten (Invalidate, new
	// columns): a caller's cache of Known answers is good while it stands.
	gen atomic.Uint64
}

// Gen returns the generation of what is known: a Known answer of true
// stays true until Gen moves.
func (b *Book) Gen() uint64 { return b.gen.Load() }

type tableKey struct{ db, table string }

func (k tableKey) String() string { return k.db + "." + k.table }

// tableState is one table's: guarded by Book.mu, except resolving, which
// serialises the slow path of one table (one change at a time, as
// StarRocks runs them).
type tableState struct {
	resolving sync.Mutex

	// cols is what StarRocks held at the last read (nil: not read, or the
	// table does not exist); readAt is when that read was made.
	cols   *schema.Table
	readAt time.Time
	// typed, keys and changes are the identities checked against cols.
	typed   map[*schema.Table]bool
	keys    map[uint64]bool
	changes map[*schema.Table]bool
	// warned are the columns already warned about (ignored fields, columns
	// the source dropped).
	warned map[string]bool
	// expired: Expire moved the generation for this read already.
	expired bool
}

// New returns a book asking meta.
func New(meta Meta, c Config) *Book {
	if c.PollMin <= 0 {
		c.PollMin = 200 * time.Millisecond
	}
	if c.PollMax < c.PollMin {
		c.PollMax = max(2*time.Second, c.PollMin)
	}
	if c.ReportEvery <= 0 {
		c.ReportEvery = 30 * time.Second
	}
	if c.Recheck == 0 {
		c.Recheck = 30 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Log == nil {
		c.Log = service.MockResources().Logger()
	}
	return &Book{meta: meta, conf: c, m: newMetrics(c.Metrics), tables: map[tableKey]*tableState{}}
}

// Mode returns the book's mode.
func (b *Book) Mode() Mode { return b.conf.Mode }

func (b *Book) state(k tableKey) *tableState {
	st := b.tables[k]
	if st == nil {
		st = &tableState{typed: map[*schema.Table]bool{}, keys: map[uint64]bool{}, changes: map[*schema.Table]bool{}, warned: map[string]bool{}}
		b.tables[k] = st
	}
	return st
}

// Known reports whether rows with this reference were checked against the
// columns StarRocks holds, so they load as they are: the fast path, a map
// lookup. A reference with nothing in it (a row no writer described and
// whose keys were not hashed) is known: the output hashes the keys of such
// rows itself before it asks.
func (b *Book) Known(db, table string, r Ref) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.tables[tableKey{db, table}]
	if st == nil {
		return r.Typed == nil && r.Keys == 0 && r.Change == nil
	}
	if b.conf.Recheck > 0 && b.conf.Now().Sub(st.readAt) >= b.conf.Recheck {
		return r.Typed == nil && r.Keys == 0 && r.Change == nil
	}
	switch {
	case r.Change != nil:
		return st.changes[r.Change]
	case r.Typed != nil:
		return st.typed[r.Typed]
	case r.Keys != 0:
		return st.keys[r.Keys]
	}
	return true
}

// Invalidate forgets what is known of db.table: a load named a table or a
// column StarRocks lacks, so the next row of the table is checked again.
func (b *Book) Invalidate(db, table string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.tables, tableKey{db, table})
	b.gen.Add(1)
}

// Expire moves the generation when a table's schema is older than
// Recheck, so that callers caching Known answers ask again (and the next
// row of that table has it read).
func (b *Book) Expire() {
	if b.conf.Recheck <= 0 {
		return
	}
	now := b.conf.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, st := range b.tables {
		if st.cols != nil && !st.expired && now.Sub(st.readAt) >= b.conf.Recheck {
			st.expired = true
			b.gen.Add(1)
		}
	}
}

// observe records the columns StarRocks holds, read at readAt, and
// reports whether they differ from the last read's (a first read counts
// as a change: the columns may have just appeared). What was checked
// against other columns is checked again when it comes; what was checked
// against the same columns stays known.
func (b *Book) observe(k tableKey, cols *schema.Table, readAt time.Time) (changed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.state(k)
	st.readAt, st.expired = readAt, false
	if st.cols != nil && cols != nil && sameColumns(st.cols, cols) {
		return false
	}
	st.cols = cols
	clear(st.typed)
	clear(st.keys)
	clear(st.changes)
	b.gen.Add(1)
	return true
}

// sameColumns reports whether two reads of a table show the same columns.
func sameColumns(a, b *schema.Table) bool {
	if len(a.Columns) != len(b.Columns) || len(a.Key) != len(b.Key) {
		return false
	}
	for i, c := range a.Columns {
		d := b.Columns[i]
		if c.Name != d.Name || c.Type.String() != d.Type.String() || c.Nullable != d.Nullable {
			return false
		}
	}
	for i := range a.Key {
		if a.Key[i] != b.Key[i] {
			return false
		}
	}
	return true
}

// remember records that r was checked against the columns last observed.
func (b *Book) remember(k tableKey, r Ref) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.state(k)
	switch {
	case r.Change != nil:
		st.changes[r.Change] = true
	case r.Typed != nil:
		st.typed[r.Typed] = true
	case r.Keys != 0:
		st.keys[r.Keys] = true
	}
}

// warnOnce reports whether the message about a column was not logged yet.
func (b *Book) warnOnce(k tableKey, what, column string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.state(k)
	key := what + "\x00" + strings.ToLower(column)
	if st.warned[key] {
		return false
	}
	st.warned[key] = true
	return true
}

// columns reads db.table's columns.
func (b *Book) columns(ctx context.Context, k tableKey) (*schema.Table, bool, error) {
	return b.meta.Columns(ctx, k.db, k.table)
}

// Resolve decides whether rows with reference r can be loaded into
// db.table, applying what they need when the mode is Evolve, and remembers
// the answer when they can. It blocks for as long as a schema-change job
// runs; it ends early only with ctx (then the error is ctx's). A read or a
// statement whose reply was lost is settled by reading the table again.
func (b *Book) Resolve(ctx context.Context, db, table string, r Ref) Verdict {
	k := tableKey{db, table}
	b.mu.Lock()
	st := b.state(k)
	b.mu.Unlock()
	st.resolving.Lock()
	defer st.resolving.Unlock()
	if b.Known(db, table, r) {
		return Verdict{}
	}
	want := r.Change
	if want == nil {
		want = r.Typed
	}
	// readyAt is when the columns the rows need were last seen to change:
	// a change applied here, or a read that shows columns other than the
	// last one's (another writer's change, an operator's, or the first
	// read). The rows may be loaded only into a StarRocks transaction
	// begun after it: one begun before may have planned the table with
	// the old columns, and would drop the new ones' values (§14.3).
	var readyAt time.Time
	var refused error
	var refusedStmt string
	for attempt := 0; ; attempt++ {
		have, found, err := b.columns(ctx, k)
		if err != nil {
			if ctx.Err() != nil {
				return transient(ctx.Err())
			}
			return transient(fmt.Errorf("reading the columns of %s: %w", k, err))
		}
		readAt := b.conf.Now()
		var cols *schema.Table
		if found {
			cols = have
		}
		if b.observe(k, cols, readAt) && readAt.After(readyAt) {
			readyAt = readAt
		}
		plan, verr := b.plan(k, have, found, want, r)
		if verr != nil {
			return Verdict{Err: verr}
		}
		if len(plan) == 0 {
			b.remember(k, r)
			return Verdict{ReadyAt: readyAt}
		}
		if refused != nil && slices.ContainsFunc(plan, func(s step) bool { return s.stmt == refusedStmt }) {
			// Refused, and the table still lacks what the rows need: the
			// same statement would be refused again.
			return Verdict{Err: refused}
		}
		// A refusal the table's new state explains (another writer added
		// part of what the rows need) is planned afresh.
		refused = nil
		if attempt >= maxAttempts {
			return transient(fmt.Errorf("the schema change of %s did not take effect after %d attempts (%s): check the table and its schema-change jobs (SHOW ALTER TABLE COLUMN); it is tried again", k, attempt, plan[0].stmt))
		}
		for _, step := range plan {
			if err := b.apply(ctx, k, step); err != nil {
				if ctx.Err() != nil {
					return transient(ctx.Err())
				}
				if re, ok := err.(refusedError); ok {
					// Read the table once more: another writer may
					// have made the change.
					refused, refusedStmt = re.error, step.stmt
					break
				}
				if _, settle := err.(settleError); settle {
					// Unknown outcome: read the table again.
					break
				}
				return Verdict{Err: err}
			}
		}
		readyAt = b.conf.Now()
	}
}

// maxAttempts bounds the rounds of DDL of one Resolve whose outcome the
// table keeps not showing.
const maxAttempts = 5

// step is one DDL statement of a plan.
type step struct {
	kind string // create, add, modify
	stmt string
	// created: CREATE TABLE (synchronous, no job to wait for).
	created bool
}

// plan returns the statements that make db.table take the rows, by mode,
// or the error that poisons them. An empty plan: the table takes them.
func (b *Book) plan(k tableKey, have *schema.Table, found bool, want *schema.Table, r Ref) ([]step, error) {
	mode := b.conf.Mode
	if !found {
		switch {
		case mode == Ignore:
			// The load decides (an unknown table fails it, loudly).
			return nil, nil
		case mode == Error:
			b.m.mismatch(k)
			return nil, fmt.Errorf("table %s does not exist (schema_evolution: error): create it, or set schema_evolution: evolve", k)
		case want == nil:
			return nil, fmt.Errorf("table %s does not exist, and its rows carry no types (schema_evolution: evolve creates a table only from a source that gives its schema): create it yourself, or send schemas (Debezium: value.converter.schemas.enable=true; Maxwell: output_ddl=true)", k)
		}
		sql, err := schema.CreateTableSQL(k.db, k.table, want, b.conf.CreateProperties)
		if err != nil {
			return nil, fmt.Errorf("creating %s (schema_evolution: evolve): %w; create it yourself", k, err)
		}
		return []step{{kind: "create", stmt: sql, created: true}}, nil
	}
	if want == nil {
		return b.planKeys(k, have, r.KeyNames)
	}
	d := schema.Compare(have, want)
	if err := b.planCased(k, d.Cased); err != nil {
		return nil, err
	}
	for _, col := range d.Dropped {
		if r.Typed != nil && b.warnOnce(k, "dropped", col) {
			b.conf.Log.Infof("Column %s of %s is no longer sent by the source: it stays, and later rows leave it NULL or its default", col, k)
		}
	}
	switch mode {
	case Ignore:
		for _, c := range d.Add {
			b.ignored(k, c.Name)
		}
		return nil, nil
	case Error:
		if len(d.Add) > 0 {
			b.m.mismatch(k)
			return nil, fmt.Errorf("table %s has no column %s (schema_evolution: error): add %s (ALTER TABLE %s ADD COLUMN …), or set schema_evolution: evolve or ignore",
				k, names(d.Add), plural(len(d.Add), "it", "them"), k)
		}
		if len(d.Conflicts) > 0 {
			// A type the column cannot hold (a BIGINT into DOUBLE rounds,
			// a wider VARCHAR is cut or filtered): error changes nothing
			// and loses nothing.
			b.m.mismatch(k)
			msgs := make([]string, len(d.Conflicts))
			for i, c := range d.Conflicts {
				msgs[i] = c.Error()
			}
			return nil, fmt.Errorf("table %s cannot take the source's schema (schema_evolution: error): %s; change the table yourself (ALTER TABLE), or set schema_evolution: evolve", k, strings.Join(msgs, "; "))
		}
		return nil, nil
	}
	if len(d.Conflicts) > 0 {
		b.m.mismatch(k)
		msgs := make([]string, len(d.Conflicts))
		for i, c := range d.Conflicts {
			msgs[i] = c.Error()
		}
		return nil, fmt.Errorf("table %s cannot take the source's schema: %s; change the table yourself (ALTER TABLE, or recreate it) and the stalled source transaction goes on, or configure dead_letter to set it aside", k, strings.Join(msgs, "; "))
	}
	var plan []step
	if len(d.Add) > 0 {
		sql, err := schema.AddColumnsSQL(k.db, k.table, d.Add)
		if err != nil {
			return nil, fmt.Errorf("adding columns to %s: %w", k, err)
		}
		plan = append(plan, step{kind: "add", stmt: sql})
	}
	for _, m := range d.Modify {
		sql, err := schema.ModifyColumnSQL(k.db, k.table, m.Column)
		if err != nil {
			return nil, fmt.Errorf("widening column %s of %s: %w", m.Column.Name, k, err)
		}
		plan = append(plan, step{kind: "modify", stmt: sql})
	}
	return plan, nil
}

// planKeys is plan for an untyped row: its keys against the columns.
func (b *Book) planKeys(k tableKey, have *schema.Table, keys []string) ([]step, error) {
	var missing []string
	for _, key := range keys {
		if key == "__op" {
			continue
		}
		if _, ok := have.Column(key); !ok {
			missing = append(missing, key)
		}
	}
	if err := b.planCased(k, casedKeys(have, keys)); err != nil {
		return nil, err
	}
	if len(missing) == 0 {
		return nil, nil
	}
	sort.Strings(missing)
	list := strings.Join(missing, ", ")
	switch b.conf.Mode {
	case Ignore:
		for _, c := range missing {
			b.ignored(k, c)
		}
		return nil, nil
	case Error:
		b.m.mismatch(k)
		return nil, fmt.Errorf("table %s has no column %s (schema_evolution: error): add %s (ALTER TABLE %s ADD COLUMN …), or set schema_evolution: ignore to load without %s",
			k, list, plural(len(missing), "it", "them"), k, plural(len(missing), "it", "them"))
	}
	b.m.mismatch(k)
	return nil, fmt.Errorf("table %s has no column %s, and the source gives no types, so schema_evolution: evolve cannot add %s: add %s yourself (ALTER TABLE %s ADD COLUMN …), send schemas (Debezium: value.converter.schemas.enable=true; Maxwell: output_ddl=true), or set schema_evolution: ignore",
		k, list, plural(len(missing), "it", "them"), plural(len(missing), "it", "them"), k)
}

// ignored counts a field the table lacks (Ignore) and warns once.
func (b *Book) ignored(k tableKey, column string) {
	b.m.ignoredField(k, column)
	if b.warnOnce(k, "ignored", column) {
		b.conf.Log.Warnf("Rows for %s carry the field %s, which the table has no column for: StarRocks drops its values (schema_evolution: ignore; counted in starrocks_txn_ignored_fields)", k, column)
	}
}

func names(cols []schema.Column) string {
	n := make([]string, len(cols))
	for i, c := range cols {
		n[i] = c.Name
	}
	return strings.Join(n, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
