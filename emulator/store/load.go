package store

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// maxErrors is how many row errors Parsed.Errors keeps.
const maxErrors = 50

// Parsed is the result of converting one load body.
type Parsed struct {
	Rows       []Row // rows that passed validation, in body order (deletes included)
	Loaded     int64 // len(Rows): delete rows count as loaded
	Filtered   int64 // rows that failed conversion, NOT NULL or strict mode
	Unselected int64 // rows the `where` header removed
	Errors     []string
}

func (r *Parsed) addError(msg string) {
	r.Filtered++
	if len(r.Errors) < maxErrors {
		r.Errors = append(r.Errors, msg)
	}
}

// Parse converts one whole load body for a table: a plain stream load, or a test. It is
// ParseStream and EndStream on a fresh stream. A body that is not a valid document at all
// (malformed JSON, a CSV stream ending inside an enclosed field) returns an error; row-level
// problems are counted in Filtered, never an error.
func (s *Store) Parse(db, table string, body []byte, p LoadParams) (*Parsed, error) {
	var st Stream
	res, err := s.ParseStream(db, table, body, p, &st)
	if err != nil {
		return nil, err
	}
	end, err := s.EndStream(db, table, p, &st)
	if err != nil {
		return nil, err
	}
	res.merge(end)
	return res, nil
}

// ParseStream converts one body of a load stream (the loads of one (label, table) in a
// transaction).
//
// JSON: each body is a whole document sequence; with strip_outer_array each element of a
// top-level array is a row; without it each top-level document is one row. Several
// top-level documents may follow each other in one body (as StarRocks' JSON reader allows).
// A document whose shape contradicts strip_outer_array (an array without it, an object with
// it) is one filtered row with the BE's message.
//
// CSV: the bodies form one stream (see Stream): the records the body completes are
// converted, an unterminated last record stays open in st for the next body or EndStream.
//
// The stream keeps the table's schema from its first body on, as a transaction's table keeps
// the plan of its first load: a schema change that finishes meanwhile does not change how
// the later bodies are read, and Apply maps the rows onto the new schema (remap.go).
func (s *Store) ParseStream(db, table string, body []byte, p LoadParams, st *Stream) (*Parsed, error) {
	b, err := s.streamBuilder(db, table, p, st)
	if err != nil {
		return nil, err
	}
	if p.CSVCompression != "" {
		if body, err = decompressCSV(p.CSVCompression, body); err != nil {
			return nil, err
		}
	}
	switch p.Format {
	case "json":
		return b.parseJSON(body)
	case "csv", "":
		return b.parseCSV(body, st, false)
	default:
		return nil, fmt.Errorf("unknown data format, format=%s", p.Format)
	}
}

// EndStream ends a load stream: an open last CSV record becomes a row. It returns an empty
// result when nothing was open.
func (s *Store) EndStream(db, table string, p LoadParams, st *Stream) (*Parsed, error) {
	if !st.Pending() {
		st.rest = nil
		return &Parsed{}, nil
	}
	b, err := s.streamBuilder(db, table, p, st)
	if err != nil {
		return nil, err
	}
	return b.parseCSV(nil, st, true)
}

// streamBuilder is the row builder of a load stream, under the schema the stream took at
// its first body.
func (s *Store) streamBuilder(db, table string, p LoadParams, st *Stream) (*rowBuilder, error) {
	if st.sc == nil {
		sc, err := s.Table(db, table)
		if err != nil {
			return nil, err
		}
		st.sc = sc
	}
	return s.rowBuilderFor(st.sc, p)
}

// merge adds o's rows and counters to r (o's rows come after r's).
func (r *Parsed) merge(o *Parsed) {
	if o == nil {
		return
	}
	r.Rows = append(r.Rows, o.Rows...)
	r.Loaded += o.Loaded
	r.Filtered += o.Filtered
	r.Unselected += o.Unselected
	for _, e := range o.Errors {
		if len(r.Errors) < maxErrors {
			r.Errors = append(r.Errors, e)
		}
	}
}

// PlanLoad checks a load's parameters against its table the way the FE plans a table's first
// load of a transaction (StreamLoadPlanner): unknown columns, expressions that do not
// analyse, a NOT NULL column without default left out of the columns header, partial update
// or merge_condition on the wrong table. Parse reports the same errors.
func (s *Store) PlanLoad(db, table string, p LoadParams) error {
	_, err := s.rowBuilder(db, table, p)
	return err
}

// rowBuilder checks the load parameters against the table and builds the converter.
func (s *Store) rowBuilder(db, table string, p LoadParams) (*rowBuilder, error) {
	sc, err := s.Table(db, table)
	if err != nil {
		return nil, err
	}
	return s.rowBuilderFor(sc, p)
}

// rowBuilderFor checks the load parameters against the schema sc and builds the converter.
func (s *Store) rowBuilderFor(sc *TableSchema, p LoadParams) (*rowBuilder, error) {
	if p.PartialUpdate && sc.KeyType != PrimaryKey {
		return nil, fmt.Errorf("Only primary key table support partial update")
	}
	if p.MergeCondition != "" {
		if sc.KeyType != PrimaryKey {
			return nil, fmt.Errorf("merge_condition is only supported by PRIMARY KEY tables")
		}
		ci := sc.ColumnIndex(p.MergeCondition)
		if ci < 0 {
			return nil, fmt.Errorf("Unknown column '%s' in merge_condition", p.MergeCondition)
		}
		for _, k := range sc.keyIdx {
			if k == ci {
				return nil, fmt.Errorf("merge_condition column '%s' must not be a primary key column", p.MergeCondition)
			}
		}
		if t := sc.Columns[ci].Type; t == TypeJSON {
			return nil, fmt.Errorf("merge_condition column '%s' has type %s, which cannot be compared", p.MergeCondition, t)
		}
	}
	b, err := newRowBuilder(sc, p)
	if err != nil {
		return nil, err
	}
	if p.Where != "" {
		if b.where, err = s.compileWhere(sc, p.Where); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// rowBuilder converts rows of one body.
type rowBuilder struct {
	sc      *TableSchema
	p       LoadParams
	isPK    bool
	opCol   bool   // __op is recognised (PRIMARY KEY table without a column named __op)
	allowed []bool // columns the `columns` header selects (nil: all)
	targets []int  // CSV/jsonpaths: field i -> column index (-1 skip, -2 __op)
	paths   [][]pathElem
	// sources maps a source field's name, exactly as the plan names it, to its column
	// index or targetOp: the columns header's plain names, or (no plain names) the table's
	// columns as stored and __op. The BE's JSON reader looks each key up in this exact map
	// (docs/notes/starrocks-protocol.md §9): a key whose case differs matches nothing.
	sources  map[string]int
	keyMemo  []keyMemo    // key seen at each member position of the previous object
	mergeCol int          // Row.MergeCol
	where    whereFunc    // the `where` header, nil when absent
	derived  []derivedCol // mapping expressions of the columns header
	plain    []string     // the plain entries of the columns header (source fields)
	now      time.Time
	tz       string // the load's time zone
	res      *Parsed

	// texts shares the values of repeated short texts among the load's rows (texts.go).
	texts texts

	// per row
	vals []any
	// slab is where the next rows' vals are cut from: a block for a few
	// rows, not an allocation per row.
	slab []any
	seen []bool
	op   Op
	bad  string // first error of the row
}

// DefaultTimeZone is StarRocks's default time zone: the time_zone session variable's and a
// stream load's when its `timezone` header is absent.
const DefaultTimeZone = "Asia/Shanghai"

var locations sync.Map // time zone name -> *time.Location (nil when unknown)

// loadLocation caches time.LoadLocation, which reads the zone database on every call.
func loadLocation(name string) *time.Location {
	if v, ok := locations.Load(name); ok {
		return v.(*time.Location)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		loc = nil
	}
	locations.Store(name, loc)
	return loc
}

// keyMemo remembers which column the key at one member position mapped to: rows of a load
// usually repeat their keys in the same order, so most lookups are one comparison.
type keyMemo struct {
	key string
	ci  int
}

const (
	targetSkip = -1
	targetOp   = -2
)

func newRowBuilder(sc *TableSchema, p LoadParams) (*rowBuilder, error) {
	b := &rowBuilder{sc: sc, p: p, isPK: sc.KeyType == PrimaryKey, res: &Parsed{}}
	b.opCol = b.isPK && sc.ColumnIndex("__op") < 0
	if p.MergeCondition != "" {
		b.mergeCol = sc.ColumnIndex(p.MergeCondition) + 1
	}
	b.now = time.Now()
	if p.Timezone != "" {
		if loc := loadLocation(p.Timezone); loc != nil {
			b.now = b.now.In(loc)
		}
	}
	// Mapping expressions run in the stream load's time zone, Asia/Shanghai without a
	// `timezone` header (StreamLoadInfo's timezone, TimeUtils.DEFAULT_TIME_ZONE), whatever
	// the machine's zone. (A DEFAULT CURRENT_TIMESTAMP keeps the wall clock above.)
	b.tz = p.Timezone
	if b.tz == "" {
		b.tz = DefaultTimeZone
	}
	b.now = time.Date(b.now.Year(), b.now.Month(), b.now.Day(), b.now.Hour(), b.now.Minute(), b.now.Second(), 0, time.UTC)
	var plain []string
	for _, entry := range p.Columns {
		if target, expr, ok := strings.Cut(entry, "="); ok {
			d, err := b.derivedColumn(strings.Trim(strings.TrimSpace(target), "`"), strings.TrimSpace(expr), p.Columns)
			if err != nil {
				return nil, err
			}
			b.derived = append(b.derived, d)
			continue
		}
		plain = append(plain, entry)
	}
	if len(plain) > 0 {
		b.allowed = make([]bool, len(sc.Columns))
		for _, name := range plain {
			ci := sc.ColumnIndex(name)
			switch {
			case ci >= 0:
				b.allowed[ci] = true
				b.targets = append(b.targets, ci)
			case b.opCol && strings.EqualFold(name, "__op"):
				b.targets = append(b.targets, targetOp)
			default:
				// A name that is no column is a source field the load skips (StarRocks
				// treats it as a temporary column only expressions could use).
				b.targets = append(b.targets, targetSkip)
			}
		}
		for _, d := range b.derived {
			if d.target >= 0 {
				b.allowed[d.target] = true
			}
		}
	} else {
		// No plain names (none, or only mapping expressions): the source fields are the
		// table's columns in order, as StarRocks does.
		for i := range sc.Columns {
			b.targets = append(b.targets, i)
		}
	}
	b.plain = plain
	b.sources = make(map[string]int, len(sc.Columns)+1)
	if len(plain) > 0 {
		for i, name := range plain {
			if _, dup := b.sources[name]; !dup {
				b.sources[name] = b.targets[i]
			}
		}
	} else {
		for i, c := range sc.Columns {
			b.sources[c.Name] = i
		}
		if b.opCol {
			// Load.initColumns adds the source field "__op", spelled so.
			b.sources["__op"] = targetOp
		}
	}
	if b.allowed != nil && !p.PartialUpdate {
		// Load.initColumns: a column the header leaves out needs a default or NULL; the
		// plan fails at the first load otherwise (test_stream_load_exception_handling).
		for i, c := range sc.Columns {
			if !b.allowed[i] && !c.Nullable && c.Default == nil {
				return nil, fmt.Errorf("Column has no default value. column: %s", c.Name)
			}
		}
	}
	if p.PartialUpdate {
		for _, ki := range sc.keyIdx {
			if b.allowed != nil && !b.allowed[ki] {
				return nil, fmt.Errorf("partial update: the columns header must list every primary key column, %s is missing", sc.Columns[ki].Name)
			}
		}
	}
	if len(p.JSONPaths) > 0 {
		if len(plain) > 0 && len(plain) != len(p.JSONPaths) {
			return nil, fmt.Errorf("jsonpaths has %d paths but the columns header lists %d columns: they must match one to one", len(p.JSONPaths), len(plain))
		}
		if len(plain) == 0 && len(p.JSONPaths) > len(sc.Columns) {
			return nil, fmt.Errorf("jsonpaths has %d paths but table %s has %d columns", len(p.JSONPaths), sc.Name, len(sc.Columns))
		}
		for _, jp := range p.JSONPaths {
			pe, err := compilePath(jp)
			if err != nil {
				return nil, err
			}
			b.paths = append(b.paths, pe)
		}
		b.targets = b.targets[:len(b.paths)]
	}
	n := len(sc.Columns)
	b.seen = make([]bool, n)
	return b, nil
}

func (b *rowBuilder) startRow() {
	n := len(b.sc.Columns)
	if len(b.slab) < n {
		// A block per slabRows rows: a stored row keeps its block alive, so
		// it stays small.
		b.slab = make([]any, n*slabRows)
	}
	// Full slice expression: appending to a row's values never reaches the
	// next row's.
	b.vals, b.slab = b.slab[:n:n], b.slab[n:]
	clear(b.seen)
	b.op = OpUpsert
	b.bad = ""
}

// slabRows is how many rows' values startRow allocates at once.
const slabRows = 16

// rowError records the first problem of the current row.
func (b *rowBuilder) rowError(format string, args ...any) {
	if b.bad == "" {
		b.bad = fmt.Sprintf(format, args...)
	}
}

// setValue stores a converted value (or records the failure) for column ci.
func (b *rowBuilder) setValue(ci int, v any, err error, raw func() string) {
	if b.seen[ci] {
		return // duplicate key: first wins
	}
	b.seen[ci] = true
	if err != nil {
		c := &b.sc.Columns[ci]
		if b.p.StrictMode {
			b.rowError("Value %s of column '%s' fails to convert to %s (strict mode)", describeValue(raw()), c.Name, c.SQLType())
			return
		}
		if !c.Nullable {
			b.rowError("Value %s of column '%s' fails to convert to %s and the column is NOT NULL", describeValue(raw()), c.Name, c.SQLType())
			return
		}
		v = nil
	}
	b.vals[ci] = v
}

func (b *rowBuilder) setOp(text string) {
	switch strings.TrimSpace(text) {
	case "0":
		b.op = OpUpsert
	case "1":
		b.op = OpDelete
	default:
		b.rowError("Invalid __op value %s: must be 0 (upsert) or 1 (delete)", describeValue(text))
	}
}

// finishRow applies defaults and NOT NULL checks and emits or filters the row.
func (b *rowBuilder) finishRow(rowText func() string) {
	sc := b.sc
	var set []bool
	if b.p.PartialUpdate {
		set = make([]bool, len(sc.Columns))
		copy(set, b.seen)
	}
	for i := range sc.Columns {
		c := &sc.Columns[i]
		if !b.seen[i] {
			switch {
			case c.DefaultCurrentTimestamp:
				b.vals[i] = b.now
			case c.Default != nil:
				b.vals[i] = c.defaultValue
			case b.p.PartialUpdate:
				if b.isKeyCol(i) {
					b.rowError("partial update row has no value for primary key column '%s'", c.Name)
				} else if !c.Nullable {
					b.vals[i] = zeroValue(c)
				}
				continue
			default:
				b.vals[i] = nil
			}
		}
		if b.vals[i] == nil && !c.Nullable && b.bad == "" {
			b.rowError("NULL value in non-nullable column '%s'", c.Name)
		}
	}
	if b.bad != "" {
		b.res.addError(fmt.Sprintf("Error: %s. Row: %s", b.bad, truncate(rowText(), 200)))
		return
	}
	if b.where != nil {
		ok, err := b.where(b.vals)
		if err != nil {
			b.res.addError(fmt.Sprintf("Error: evaluating the where condition: %s. Row: %s", err, truncate(rowText(), 200)))
			return
		}
		if !ok {
			b.res.Unselected++
			return
		}
	}
	b.res.Rows = append(b.res.Rows, Row{Op: b.op, Values: b.vals, Set: set, MergeCol: b.mergeCol, sc: b.sc})
	b.res.Loaded++
}

func (b *rowBuilder) isKeyCol(i int) bool {
	for _, k := range b.sc.keyIdx {
		if k == i {
			return true
		}
	}
	return false
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
