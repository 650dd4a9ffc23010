package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"
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

// Parse converts one load body for a table. A body that is not a valid document at all
// (malformed JSON, a CSV body without its final row delimiter) returns an error; row-level
// problems are counted in Filtered, never an error.
//
// JSON: with strip_outer_array each element of a top-level array is a row; without it each
// top-level document is one row. Several top-level documents may follow each other in one
// body (as StarRocks' JSON reader allows). A document whose shape contradicts
// strip_outer_array (an array without it, an object with it) is one filtered row with the
// BE's message.
func (s *Store) Parse(db, table string, body []byte, p LoadParams) (*Parsed, error) {
	sc, err := s.Table(db, table)
	if err != nil {
		return nil, err
	}
	if p.PartialUpdate && sc.KeyType != PrimaryKey {
		return nil, fmt.Errorf("Only primary key table support partial update")
	}
	if p.CSVCompression != "" {
		if body, err = decompressCSV(p.CSVCompression, body); err != nil {
			return nil, err
		}
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
	switch p.Format {
	case "json":
		return b.parseJSON(body)
	case "csv", "":
		return b.parseCSV(body)
	default:
		return nil, fmt.Errorf("unknown data format, format=%s", p.Format)
	}
}

// rowBuilder converts rows of one body.
type rowBuilder struct {
	sc       *TableSchema
	p        LoadParams
	isPK     bool
	opCol    bool   // __op is recognised (PRIMARY KEY table without a column named __op)
	allowed  []bool // columns the `columns` header selects (nil: all)
	targets  []int  // CSV/jsonpaths: field i -> column index (-1 skip, -2 __op)
	paths    [][]pathElem
	misses   map[string]int // JSON keys not matched exactly -> column index or -1
	keyMemo  []keyMemo      // key seen at each member position of the previous object
	mergeCol int            // Row.MergeCol
	where    whereFunc      // the `where` header, nil when absent
	derived  []derivedCol   // mapping expressions of the columns header
	now      time.Time
	res      *Parsed

	// per row
	vals []any
	seen []bool
	op   Op
	bad  string // first error of the row
}

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

// derivedCol is a `columns` entry "target = expr" with expr a constant or a source field.
type derivedCol struct {
	name, expr string
	target     int    // column index or targetOp
	isConst    bool   // constant text in value
	value      string // the constant
	source     int    // index of the referenced source field (plain entries), when !isConst
}

// derivedColumn parses one mapping expression. Supported: a quoted string, a number, NULL, or
// the name of a source field listed as a plain entry; anything else is rejected clearly.
func (b *rowBuilder) derivedColumn(name, expr string, entries []string) (derivedCol, error) {
	d := derivedCol{name: name, expr: expr, target: b.sc.ColumnIndex(name), source: -1}
	if d.target < 0 {
		if !(b.opCol && strings.EqualFold(name, "__op")) {
			return d, fmt.Errorf("columns header: Unknown column '%s' in '%s'", name, b.sc.Name)
		}
		d.target = targetOp
	}
	switch {
	case len(expr) >= 2 && (expr[0] == '\'' || expr[0] == '"') && expr[len(expr)-1] == expr[0]:
		d.isConst, d.value = true, expr[1:len(expr)-1]
	case expr != "" && (expr[0] == '-' || expr[0] >= '0' && expr[0] <= '9'):
		if _, err := strconv.ParseFloat(expr, 64); err != nil {
			return d, fmt.Errorf("columns header: %s = %s is not supported by the emulator (only constants and source field names)", name, expr)
		}
		d.isConst, d.value = true, expr
	case strings.EqualFold(expr, "null"):
		d.isConst, d.value = true, `\N`
	default:
		ref := strings.Trim(expr, "`")
		n := 0
		for _, e := range entries {
			if strings.Contains(e, "=") {
				continue
			}
			if strings.EqualFold(e, ref) {
				d.source = n
				return d, nil
			}
			n++
		}
		return d, fmt.Errorf("columns header: %s = %s is not supported by the emulator (only constants and source field names listed in the header)", name, expr)
	}
	if d.target == targetOp {
		switch strings.ToLower(d.value) {
		case "delete", "1":
			d.value = "1"
		case "upsert", "0":
			d.value = "0"
		default:
			return d, fmt.Errorf("columns header: __op = %s: use 'upsert', 'delete', 0 or 1", expr)
		}
	}
	return d, nil
}

// applyDerived sets the columns computed by mapping expressions; field returns a source
// field's text (nil for JSON, which allows constants only).
func (b *rowBuilder) applyDerived(field func(i int) (string, bool)) {
	for _, d := range b.derived {
		text := d.value
		if !d.isConst {
			t, ok := field(d.source)
			if !ok {
				continue
			}
			text = t
		}
		if d.target == targetOp {
			b.setOp(text)
			continue
		}
		b.seen[d.target] = false // the expression wins over a source field of the same name
		if text == `\N` {
			b.setValue(d.target, nil, nil, nil)
			continue
		}
		c := &b.sc.Columns[d.target]
		v, err := convertText(c, text)
		b.setValue(d.target, v, err, func() string { return text })
	}
}

const (
	targetSkip = -1
	targetOp   = -2
)

func newRowBuilder(sc *TableSchema, p LoadParams) (*rowBuilder, error) {
	b := &rowBuilder{sc: sc, p: p, isPK: sc.KeyType == PrimaryKey, misses: map[string]int{}, res: &Parsed{}}
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
	for _, d := range b.derived {
		if d.source >= len(plain) {
			return nil, fmt.Errorf("columns header: %s = %s refers to a source field that is not listed as a plain name", d.name, d.expr)
		}
	}
	if p.Format == "json" && len(p.JSONPaths) == 0 {
		for _, d := range b.derived {
			if !d.isConst {
				return nil, fmt.Errorf("columns header: %s = %s: in JSON loads the emulator evaluates constant expressions only", d.name, d.expr)
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
	b.vals = make([]any, len(b.sc.Columns))
	clear(b.seen)
	b.op = OpUpsert
	b.bad = ""
}

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
	b.res.Rows = append(b.res.Rows, Row{Op: b.op, Values: b.vals, Set: set, MergeCol: b.mergeCol})
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

// ---- JSON ----

func (b *rowBuilder) parseJSON(body []byte) (*Parsed, error) {
	s := jscan{b: body}
	slow := b.p.JSONRoot != "" || b.paths != nil
	for {
		s.ws()
		if s.i >= len(body) {
			break
		}
		if !slow {
			// Fast path: rows are converted while the document is scanned, once.
			c := body[s.i]
			if b.p.StripOuterArray && c == '[' {
				if err := b.streamArray(&s); err != nil {
					return nil, fmt.Errorf("failed to parse JSON body: %w", err)
				}
				continue
			}
			if !b.p.StripOuterArray && c == '{' {
				if err := b.streamObject(&s); err != nil {
					return nil, fmt.Errorf("failed to parse JSON body: %w", err)
				}
				continue
			}
		}
		k, st, en, _, err := s.value()
		if err != nil {
			return nil, fmt.Errorf("failed to parse JSON body: %w", err)
		}
		doc := body[st:en]
		if b.p.JSONRoot != "" {
			pe, err := compilePath(b.p.JSONRoot)
			if err != nil {
				return nil, err
			}
			rk, rs, re, ok := lookupPath(doc, k, pe)
			if !ok {
				b.startRow()
				b.rowError("JSON root %s not found", b.p.JSONRoot)
				b.finishRow(func() string { return string(doc) })
				continue
			}
			k, doc = rk, doc[rs:re]
		}
		b.document(k, doc)
	}
	return b.res, nil
}

// streamArray converts the rows of a top-level array while scanning it.
func (b *rowBuilder) streamArray(s *jscan) error {
	s.i++ // [
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return nil
	}
	for {
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == '{' {
			if err := b.streamObject(s); err != nil {
				return err
			}
		} else {
			k, st, en, _, err := s.value()
			if err != nil {
				return err
			}
			b.jsonRow(k, s.b[st:en])
		}
		s.ws()
		if s.i >= len(s.b) {
			return s.fail("unexpected end of JSON input")
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return s.fail(fmt.Sprintf("invalid character %q after array element", s.b[s.i]))
		}
	}
}

// streamObject converts one object row while scanning it.
func (b *rowBuilder) streamObject(s *jscan) error {
	st := s.i
	s.i++ // {
	b.startRow()
	member := 0
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
	} else {
		for {
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] != '"' {
				return s.fail("expected object key")
			}
			ks := s.i
			kesc, err := s.str()
			if err != nil {
				return err
			}
			key := s.b[ks+1 : s.i-1]
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] != ':' {
				return s.fail("expected ':' after object key")
			}
			s.i++
			vk, vs, ve, vesc, err := s.value()
			if err != nil {
				return err
			}
			var ci int
			if member < len(b.keyMemo) && !kesc && b.keyMemo[member].key == string(key) {
				ci = b.keyMemo[member].ci
			} else {
				ci = b.keyColumn(key, kesc)
				if !kesc {
					m := keyMemo{key: string(key), ci: ci}
					if member < len(b.keyMemo) {
						b.keyMemo[member] = m
					} else if member == len(b.keyMemo) {
						b.keyMemo = append(b.keyMemo, m)
					}
				}
			}
			member++
			if ci != targetSkip {
				b.jsonValue(ci, vk, s.b[vs:ve], vesc)
			}
			s.ws()
			if s.i >= len(s.b) {
				return s.fail("unexpected end of JSON input")
			}
			if s.b[s.i] == ',' {
				s.i++
				continue
			}
			if s.b[s.i] == '}' {
				s.i++
				break
			}
			return s.fail(fmt.Sprintf("invalid character %q after object key:value pair", s.b[s.i]))
		}
	}
	end := s.i
	if b.derived != nil {
		b.applyDerived(nil)
	}
	b.finishRow(func() string { return string(s.b[st:end]) })
	return nil
}

func (b *rowBuilder) document(k jkind, doc []byte) {
	if b.p.StripOuterArray {
		if k != jArray {
			b.startRow()
			b.rowError("JSON data is an object, strip_outer_array must be set false")
			b.finishRow(func() string { return string(doc) })
			return
		}
		it := newArrayIter(doc)
		for {
			ek, es, ee, _, ok := it.next()
			if !ok {
				return
			}
			b.jsonRow(ek, doc[es:ee])
		}
	}
	if k == jArray {
		b.startRow()
		b.rowError("JSON data is an array, strip_outer_array must be set true")
		b.finishRow(func() string { return string(doc) })
		return
	}
	b.jsonRow(k, doc)
}

func (b *rowBuilder) jsonRow(k jkind, raw []byte) {
	b.startRow()
	rowText := func() string { return string(raw) }
	if k != jObject {
		b.rowError("JSON row is a %s, not an object", jkindNames[k])
		b.finishRow(rowText)
		return
	}
	if b.paths != nil {
		for i, pe := range b.paths {
			vk, vs, ve, ok := lookupPath(raw, jObject, pe)
			if !ok {
				continue
			}
			b.jsonValue(b.targets[i], vk, raw[vs:ve], bytes.IndexByte(raw[vs:ve], '\\') >= 0)
		}
		if b.derived != nil {
			b.applyDerived(func(i int) (string, bool) {
				if i < 0 || i >= len(b.paths) {
					return "", false
				}
				vk, vs, ve, ok := lookupPath(raw, jObject, b.paths[i])
				if !ok {
					return "", false
				}
				v := raw[vs:ve]
				switch vk {
				case jNull:
					return `\N`, true
				case jString:
					s, err := unquote(v, bytes.IndexByte(v, '\\') >= 0)
					return s, err == nil
				}
				return string(v), true
			})
		}
		b.finishRow(rowText)
		return
	}
	it := newObjectIter(raw)
	for {
		key, kesc, vk, vs, ve, vesc, ok := it.next()
		if !ok {
			break
		}
		ci := b.keyColumn(key, kesc)
		if ci == targetSkip {
			continue
		}
		b.jsonValue(ci, vk, raw[vs:ve], vesc)
	}
	if b.derived != nil {
		b.applyDerived(nil)
	}
	b.finishRow(rowText)
}

// keyColumn maps a JSON key to a column index, targetOp or targetSkip.
func (b *rowBuilder) keyColumn(key []byte, esc bool) int {
	if esc {
		s, err := unquote(append(append([]byte{'"'}, key...), '"'), true)
		if err != nil {
			return targetSkip
		}
		key = []byte(s)
	}
	ci, ok := b.sc.byName[string(key)]
	if !ok {
		if ci, ok = b.misses[string(key)]; !ok {
			ks := string(key)
			ci = b.sc.ColumnIndex(ks)
			if ci < 0 {
				ci = targetSkip
				if b.opCol && strings.EqualFold(ks, "__op") {
					ci = targetOp
				}
			}
			b.misses[ks] = ci
		}
	}
	if ci >= 0 && b.allowed != nil && !b.allowed[ci] {
		return targetSkip
	}
	return ci
}

// jsonValue converts one JSON value into target column ci.
func (b *rowBuilder) jsonValue(ci int, k jkind, raw []byte, esc bool) {
	if ci == targetSkip {
		return
	}
	if ci == targetOp {
		switch k {
		case jNull:
			// a null __op is treated like a missing one: upsert
		case jNumber:
			b.setOp(string(raw))
		case jString:
			s, _ := unquote(raw, esc)
			b.setOp(s)
		default:
			b.setOp(string(raw))
		}
		return
	}
	if b.seen[ci] {
		return
	}
	c := &b.sc.Columns[ci]
	rawText := func() string { return string(raw) }
	if k == jNull {
		b.setValue(ci, nil, nil, rawText)
		return
	}
	if c.Type == TypeJSON {
		b.setValue(ci, compactJSON(raw), nil, rawText)
		return
	}
	switch k {
	case jString:
		if !esc && c.Type != TypeChar && c.Type != TypeVarchar && c.Type != TypeString {
			// Numbers, dates and booleans are parsed, never retained: read them in place.
			s := unsafe.String(unsafe.SliceData(raw[1:]), len(raw)-2)
			v, err := convertText(c, s)
			b.setValue(ci, v, err, func() string { return strings.Clone(s) })
			return
		}
		s, err := unquote(raw, esc)
		if err != nil {
			b.setValue(ci, nil, err, rawText)
			return
		}
		v, err := convertText(c, s)
		b.setValue(ci, v, err, func() string { return s })
	case jNumber:
		v, err := convertNumber(c, raw)
		b.setValue(ci, v, err, rawText)
	case jTrue, jFalse:
		var v any
		var err error
		switch c.Type {
		case TypeBoolean:
			v = k == jTrue
		case TypeChar, TypeVarchar, TypeString:
			v, err = convertText(c, string(raw))
		default:
			if k == jTrue {
				v, err = convertText(c, "1")
			} else {
				v, err = convertText(c, "0")
			}
		}
		b.setValue(ci, v, err, rawText)
	case jObject, jArray:
		var v any
		err := errConvert
		switch c.Type {
		case TypeChar, TypeVarchar, TypeString:
			v, err = convertText(c, compactJSON(raw))
		}
		b.setValue(ci, v, err, rawText)
	}
}

// convertNumber converts a JSON number; the fast path avoids strconv allocations for integers.
func convertNumber(c *Column, raw []byte) (any, error) {
	switch c.Type {
	case TypeBigInt, TypeInt, TypeSmallInt, TypeTinyInt:
		if v, ok := atoiFast(raw); ok {
			switch c.Type {
			case TypeBigInt:
				return v, nil
			case TypeInt:
				if v >= -1<<31 && v < 1<<31 {
					return int32(v), nil
				}
			case TypeSmallInt:
				if v >= -1<<15 && v < 1<<15 {
					return int16(v), nil
				}
			case TypeTinyInt:
				if v >= -1<<7 && v < 1<<7 {
					return int8(v), nil
				}
			}
			return nil, errConvert
		}
	case TypeDate, TypeDatetime:
		return nil, errConvert
	}
	return convertText(c, string(raw))
}

// atoiFast parses a plain decimal integer of at most 18 digits.
func atoiFast(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg = true
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// ---- json paths ----

type pathElem struct {
	key   string
	index int // >= 0: array index
}

func parseJSONPaths(v string) ([]string, error) {
	var paths []string
	if err := json.Unmarshal([]byte(v), &paths); err != nil {
		return nil, fmt.Errorf("Invalid jsonpaths: %s: it must be a JSON array of strings like [\"$.id\", \"$.name\"]", v)
	}
	for _, p := range paths {
		if _, err := compilePath(p); err != nil {
			return nil, err
		}
	}
	return paths, nil
}

// compilePath parses "$", "$.a.b", "$.a[0]", "$['a']" into elements.
func compilePath(p string) ([]pathElem, error) {
	orig := p
	p = strings.TrimSpace(p)
	if !strings.HasPrefix(p, "$") {
		return nil, fmt.Errorf("Invalid json path: %s: it must start with $", orig)
	}
	p = p[1:]
	var out []pathElem
	for p != "" {
		switch {
		case p[0] == '.':
			p = p[1:]
			end := strings.IndexAny(p, ".[")
			if end < 0 {
				end = len(p)
			}
			if end == 0 {
				return nil, fmt.Errorf("Invalid json path: %s: empty key", orig)
			}
			out = append(out, pathElem{key: p[:end], index: -1})
			p = p[end:]
		case p[0] == '[':
			end := strings.IndexByte(p, ']')
			if end < 0 {
				return nil, fmt.Errorf("Invalid json path: %s: missing ]", orig)
			}
			inner := p[1:end]
			p = p[end+1:]
			if len(inner) >= 2 && (inner[0] == '\'' || inner[0] == '"') && inner[len(inner)-1] == inner[0] {
				out = append(out, pathElem{key: inner[1 : len(inner)-1], index: -1})
				continue
			}
			n, err := strconv.Atoi(inner)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("Invalid json path: %s: bad index [%s]", orig, inner)
			}
			out = append(out, pathElem{index: n})
		default:
			return nil, fmt.Errorf("Invalid json path: %s", orig)
		}
	}
	return out, nil
}

// lookupPath finds the value at path inside the validated value doc of kind k.
func lookupPath(doc []byte, k jkind, path []pathElem) (jkind, int, int, bool) {
	start, end := 0, len(doc)
	for _, pe := range path {
		cur := doc[start:end]
		found := false
		if pe.index < 0 {
			if k != jObject {
				return 0, 0, 0, false
			}
			it := newObjectIter(cur)
			for {
				key, kesc, vk, vs, ve, _, ok := it.next()
				if !ok {
					break
				}
				ks := string(key)
				if kesc {
					ks, _ = unquote(append(append([]byte{'"'}, key...), '"'), true)
				}
				if ks == pe.key {
					k, start, end, found = vk, start+vs, start+ve, true
					break
				}
			}
		} else {
			if k != jArray {
				return 0, 0, 0, false
			}
			it := newArrayIter(cur)
			for i := 0; ; i++ {
				vk, vs, ve, _, ok := it.next()
				if !ok {
					break
				}
				if i == pe.index {
					k, start, end, found = vk, start+vs, start+ve, true
					break
				}
			}
		}
		if !found {
			return 0, 0, 0, false
		}
	}
	return k, start, end, true
}

// ---- CSV ----

func (b *rowBuilder) parseCSV(body []byte) (*Parsed, error) {
	if len(body) == 0 {
		return b.res, nil
	}
	rd := []byte(b.p.RowDelimiter)
	sep := []byte(b.p.ColumnSeparator)
	if len(rd) == 0 {
		rd = []byte("\n")
	}
	if len(sep) == 0 {
		sep = []byte("\t")
	}
	if !bytes.HasSuffix(body, rd) {
		return nil, fmt.Errorf("CSV body does not end with the row delimiter %q: every load body must end with it (the stream would join its last row with the next body's first row)", string(rd))
	}
	if b.p.Enclose != 0 || b.p.Escape != 0 {
		return b.parseCSVQuoted(body, rd, sep)
	}
	rest := body
	for skip := b.p.SkipHeader; skip > 0 && len(rest) > 0; skip-- {
		rest = rest[bytes.Index(rest, rd)+len(rd):]
	}
	for len(rest) > 0 {
		i := bytes.Index(rest, rd)
		line := rest[:i]
		rest = rest[i+len(rd):]
		b.csvRow(line, sep)
	}
	return b.res, nil
}

// parseCSVQuoted splits records and fields honouring the enclose and escape characters: an
// enclosed field may hold separators and row delimiters, a doubled enclose character inside
// it is one literal character, and the escape character makes the next byte literal.
func (b *rowBuilder) parseCSVQuoted(body, rd, sep []byte) (*Parsed, error) {
	enc, esc := b.p.Enclose, b.p.Escape
	var fields [][]byte
	var field []byte
	var quotedField []bool
	inQuote, wasQuoted := false, false
	start := 0
	skip := b.p.SkipHeader
	endField := func() {
		fields = append(fields, field)
		quotedField = append(quotedField, wasQuoted)
		field, wasQuoted = nil, false
	}
	for i := 0; i < len(body); {
		c := body[i]
		switch {
		case esc != 0 && c == esc && i+1 < len(body):
			field = append(field, body[i+1])
			i += 2
			continue
		case enc != 0 && c == enc:
			if inQuote && i+1 < len(body) && body[i+1] == enc {
				field = append(field, enc)
				i += 2
				continue
			}
			if !inQuote && len(bytes.TrimSpace(field)) == 0 {
				field = field[:0]
				inQuote, wasQuoted = true, true
				i++
				continue
			}
			if inQuote {
				inQuote = false
				i++
				// blanks between the closing quote and the separator are not part of the field
				for i < len(body) && (body[i] == ' ' || body[i] == '\t') && !bytes.HasPrefix(body[i:], sep) {
					i++
				}
				continue
			}
		case !inQuote && bytes.HasPrefix(body[i:], sep):
			endField()
			i += len(sep)
			continue
		case !inQuote && bytes.HasPrefix(body[i:], rd):
			endField()
			line := body[start:i]
			i += len(rd)
			start = i
			if skip > 0 {
				skip--
			} else {
				b.csvFields(line, fields, quotedField)
			}
			fields, quotedField = fields[:0], quotedField[:0]
			continue
		}
		field = append(field, c)
		i++
	}
	if inQuote {
		return nil, fmt.Errorf("CSV body ends inside an enclosed field: the enclose character %q is not closed", string(enc))
	}
	return b.res, nil
}

func (b *rowBuilder) csvRow(line, sep []byte) {
	fields := bytes.Split(line, sep)
	b.csvFields(line, fields, nil)
}

// csvFields converts one record's fields; quoted marks enclosed fields (never trimmed, never \N).
func (b *rowBuilder) csvFields(line []byte, fields [][]byte, quoted []bool) {
	b.startRow()
	rowText := func() string { return string(line) }
	if len(fields) != len(b.targets) {
		b.rowError("Value count does not match column count. Expect %d, but got %d", len(b.targets), len(fields))
		b.finishRow(rowText)
		return
	}
	for f, field := range fields {
		isQuoted := quoted != nil && quoted[f]
		if b.p.TrimSpace && !isQuoted {
			field = bytes.TrimSpace(field)
		}
		t := b.targets[f]
		switch {
		case t == targetSkip:
		case t == targetOp:
			b.setOp(string(field))
		case !isQuoted && string(field) == `\N`:
			b.setValue(t, nil, nil, nil)
		default:
			c := &b.sc.Columns[t]
			s := string(field)
			v, err := convertText(c, s)
			b.setValue(t, v, err, func() string { return s })
		}
	}
	if b.derived != nil {
		b.applyDerived(func(i int) (string, bool) {
			if i < 0 || i >= len(fields) {
				return "", false
			}
			return string(fields[i]), true
		})
	}
	b.finishRow(rowText)
}
