package store

import (
	"fmt"
	"slices"
	"strings"
)

// planAlter works out what an ALTER TABLE statement does to a table, as StarRocks's
// SchemaChangeHandler.analyzeAndCreateJob does (processAddColumn, processDropColumn,
// processModifyColumn, then finalAnalyze), with its refusals and their texts: the schema
// after the change and whether fast schema evolution makes it a metadata change done at once
// (docs/notes/starrocks-protocol.md §11.1, §11.4, §11.5). Clauses apply in order to a working
// copy of the columns; "already exists" is judged against the table as it was.

// alterPlan is the outcome of planAlter.
type alterPlan struct {
	target *TableSchema // the schema after the change (nil when noop)
	// fast: the table uses fast schema evolution and every clause allows it (ADD/DROP of
	// value columns, a VARCHAR widening): the change is a metadata change, done at once.
	fast bool
	// noop: the columns come out as they were (ADD then DROP of one column, a MODIFY that
	// restates the column): no job, no error.
	noop bool
	// comment: the statement only changes a column's comment (a MODIFY COLUMN that restates
	// everything else): a metadata change without a job.
	comment bool
}

// planCol is one column of the working schema and whether it is a key column.
type planCol struct {
	c   Column
	key bool
}

func planAlter(old *TableSchema, st alterTableStmt) (*alterPlan, error) {
	isKey := func(i int) bool { return i < len(old.Key) }
	orig := func(name string) (int, *Column) {
		for i := range old.Columns {
			if strings.EqualFold(old.Columns[i].Name, name) {
				return i, &old.Columns[i]
			}
		}
		return -1, nil
	}
	clauses := 0
	for _, op := range st.ops {
		clauses = max(clauses, op.clause+1)
	}
	// A MODIFY COLUMN that only changes the comment takes the comment path (no job), and
	// cannot be batched.
	for _, op := range st.ops {
		if op.kind != opModify || op.first || op.after != "" {
			continue
		}
		i, oc := orig(op.col.Name)
		if oc == nil {
			continue
		}
		mc, mkey := resolveModify(old, op.col, oc, isKey(i))
		withComment := *oc
		withComment.Comment = mc.Comment
		if mc.Comment != oc.Comment && sameColumn(&mc, mkey, &withComment, isKey(i)) {
			if clauses > 1 {
				return nil, fmt.Errorf("MODIFY COLUMN COMMENT can not be combined with other alter operations")
			}
			ns := copySchema(old)
			ns.Columns[i].Comment = mc.Comment
			if err := finishSchema(ns); err != nil {
				return nil, err
			}
			return &alterPlan{target: ns, comment: true}, nil
		}
	}

	cols := make([]planCol, len(old.Columns))
	for i := range old.Columns {
		cols[i] = planCol{c: old.Columns[i], key: isKey(i)}
	}
	find := func(name string) int {
		return slices.IndexFunc(cols, func(pc planCol) bool { return strings.EqualFold(pc.c.Name, name) })
	}
	// A MODIFY that changes a column makes it a shadow column (__starrocks_shadow_<name>)
	// for the rest of the statement: a later MODIFY or DROP of the name finds no column.
	shadowed := map[string]bool{}
	findLive := func(name string) int {
		if shadowed[strings.ToLower(name)] {
			return -1
		}
		return find(name)
	}
	fast := old.fse
	for _, op := range st.ops {
		switch op.kind {
		case opAdd:
			c := *op.col
			c.uid = 0
			key, err := checkAdd(old, &c)
			if err != nil {
				return nil, err
			}
			if i, found := orig(c.Name); found != nil {
				if sameColumn(&c, key, found, isKey(i)) {
					return nil, fmt.Errorf("Can not add column which already exists in base table: %s", c.Name)
				}
				return nil, fmt.Errorf("Can not add column which already exists in column id: %s, you can remove %s and try again.", c.Name, columnSQL(found))
			}
			if key {
				fast = false // adding a key column rewrites data on shared-nothing tables
			}
			if i := find(c.Name); i >= 0 {
				// Added by an earlier clause of this statement.
				if !sameColumn(&cols[i].c, cols[i].key, &c, key) {
					return nil, fmt.Errorf("Repeatedly add same column with different definition: %s", c.Name)
				}
				continue
			}
			pos := -1
			switch {
			case op.first:
				pos = 0
			case op.after != "":
				i := find(op.after)
				if i < 0 {
					return nil, fmt.Errorf("Column[%s] does not found", op.after)
				}
				pos = i + 1
			case key:
				pos = 0
				for i, pc := range cols {
					if pc.key {
						pos = i + 1
					}
				}
			default:
				pos = len(cols)
			}
			cols = slices.Insert(cols, pos, planCol{c: c, key: key})
		case opDrop:
			i := findLive(op.drop)
			dropKey := i >= 0 && cols[i].key
			switch old.KeyType {
			case PrimaryKey:
				if dropKey {
					return nil, fmt.Errorf("Can not drop key column in primary data model table")
				}
				if slices.ContainsFunc(old.sortKeys, func(k string) bool { return strings.EqualFold(k, op.drop) }) {
					return nil, fmt.Errorf("Can not drop sort column in primary data model table")
				}
			case UniqueKey:
				if dropKey {
					return nil, fmt.Errorf("Can not drop key column in Unique data model table")
				}
			case AggregateKey:
				if dropKey && slices.ContainsFunc(cols, func(pc planCol) bool { return pc.c.Agg == AggReplace || pc.c.Agg == AggReplaceIfNotNull }) {
					return nil, fmt.Errorf("Can not drop key column when table has value column with REPLACE aggregation method")
				}
			}
			if i < 0 {
				return nil, fmt.Errorf("Column does not exists: %s", op.drop)
			}
			if dropKey {
				fast = false
			}
			cols = slices.Delete(cols, i, i+1)
		case opModify:
			oi, oc := orig(op.col.Name)
			i := findLive(op.col.Name)
			if oc == nil || i < 0 {
				return nil, fmt.Errorf("Column[%s] does not exists", op.col.Name)
			}
			base := cols[i] // a copy: cols changes below
			mc, mkey := resolveModify(old, op.col, &base.c, base.key)
			if err := checkModifyModel(old, op.col, &mc, oc, isKey(oi)); err != nil {
				return nil, err
			}
			last := -1
			hasPos := op.after != "" || op.first
			if op.after != "" {
				if last = find(op.after); last < 0 {
					return nil, fmt.Errorf("Column[%s] does not exists", op.after)
				}
			}
			if hasPos && last == i {
				return nil, fmt.Errorf("Column[%s] modify position is invalid", op.after)
			}
			mc.Name, mc.uid = base.c.Name, base.c.uid
			wasKey := base.key
			pc := planCol{c: mc, key: mkey}
			before := keyNames(cols)
			switch {
			case !hasPos:
				cols[i] = pc
			case last > i:
				cols = slices.Insert(cols, last+1, pc)
				cols = slices.Delete(cols, i, i+1)
			default:
				cols = slices.Delete(cols, i, i+1)
				cols = slices.Insert(cols, last+1, pc)
			}
			keyOrderChanged := wasKey && mkey && !slices.Equal(before, keyNames(cols))
			if !sameColumn(&mc, mkey, &base.c, wasKey) {
				shadowed[strings.ToLower(mc.Name)] = true
			}
			if varcharWiden(oc, isKey(oi), &mc, mkey) && mc.Comment == oc.Comment && sameDefault(oc, &mc) &&
				old.fse && !keyOrderChanged && !hasPos {
				continue // the fast path for a VARCHAR widening bypasses the key checks
			}
			if keyOrderChanged && old.KeyType == PrimaryKey {
				return nil, fmt.Errorf("Can not reorder pk keys by modify column")
			}
			fast = false // every other type change rewrites data on shared-nothing tables
		}
	}
	return finalAnalyze(old, cols, fast)
}

// checkAdd holds an added column to the rules of its table's model (addColumnInternal) and
// says whether it is a key column.
func checkAdd(old *TableSchema, c *Column) (bool, error) {
	if !c.Nullable && c.Default == nil && !c.DefaultCurrentTimestamp {
		return false, fmt.Errorf("Field '%s' is not null but doesn't have a default value", c.Name)
	}
	if c.keySet && (c.Agg != AggNone || old.KeyType == PrimaryKey) {
		agg := "REPLACE"
		if c.Agg != AggNone {
			agg = c.Agg.String()
		}
		return false, analyzerErr(c, fmt.Sprintf("Column definition is wrong. Cannot specify aggregate function '%s' for key column '%s'.", agg, c.Name))
	}
	switch old.KeyType {
	case PrimaryKey:
		if c.Agg != AggNone && c.Agg != AggReplace {
			return false, fmt.Errorf("Can not assign aggregation method on column in Primary data model table: %s", c.Name)
		}
		if strings.EqualFold(c.Name, "__op") {
			return false, fmt.Errorf("Column name '%s' is reserved for primary key table", c.Name)
		}
		c.Agg = AggNone // REPLACE is what every value column of a PRIMARY KEY table does
		return false, nil
	case AggregateKey:
		if c.Agg == AggNone && !c.keySet {
			return false, fmt.Errorf("Column '%s' on aggregate table '%s' must specify either an aggregate function, making it a value column, or the KEY keyword, making it a key column. Adding a key column changes the table's aggregation key and rewrites existing data. To restore the previous behavior of treating such a column as a key column, set FE config allow_implicit_key_column_in_agg_add_column to true.", c.Name, old.Name)
		}
		if c.Agg == AggSum && c.Default != nil && *c.Default != "0" {
			return false, fmt.Errorf("The default value of '%s' with SUM aggregation function must be zero", c.Name)
		}
		return c.keySet, nil
	case UniqueKey:
		if c.Agg != AggNone {
			return false, fmt.Errorf("Can not assign aggregation method on column in Unique data model table: %s", c.Name)
		}
	default:
		if c.Agg != AggNone {
			return false, fmt.Errorf("Can not assign aggregation method on column in Duplicate data model table: %s", c.Name)
		}
	}
	return c.keySet, nil
}

// resolveModify is the column a MODIFY COLUMN definition gives (fillKeyAndAggregationTypeForModColumn):
// a PRIMARY KEY table's key column stays a key and its value columns keep REPLACE; in an
// AGGREGATE KEY table a column without aggregation is a key; elsewhere KEY says. NULL / NOT
// NULL left out: a key column of a PRIMARY KEY table is NOT NULL, any other column NULL.
func resolveModify(old *TableSchema, def, cur *Column, curKey bool) (Column, bool) {
	mc := *def
	var key bool
	switch old.KeyType {
	case PrimaryKey:
		key = curKey || def.keySet
		mc.Agg = AggNone
	case AggregateKey:
		key = def.Agg == AggNone || def.keySet
	default:
		key = def.keySet
	}
	if !def.nullSet {
		mc.Nullable = !(key && old.KeyType == PrimaryKey)
	}
	return mc, key
}

// checkModifyModel is processModifyColumn's checks by table model.
func checkModifyModel(old *TableSchema, def, mc, base *Column, baseKey bool) error {
	switch old.KeyType {
	case PrimaryKey:
		if baseKey {
			if !varcharIncrease(base, mc) {
				return fmt.Errorf("Can not modify key column: %s for primary key table except for increasing varchar length", mc.Name)
			}
			if mc.Nullable {
				return fmt.Errorf("primary key column[%s] cannot be nullable", mc.Name)
			}
		}
		for _, k := range old.sortKeys {
			if strings.EqualFold(k, base.Name) && !varcharIncrease(base, mc) {
				return fmt.Errorf("Can not modify sort column in primary data model table except for increasing varchar length")
			}
		}
	case AggregateKey:
		if def.keySet && def.Agg != AggNone {
			return fmt.Errorf("Can not assign aggregation method on key column: %s", def.Name)
		}
	case UniqueKey:
		if def.Agg != AggNone {
			return fmt.Errorf("Can not assign aggregation method on column in Unique data model table: %s", def.Name)
		}
	default:
		if def.Agg != AggNone {
			return fmt.Errorf("Can not assign aggregation method on column in Duplicate data model table: %s", def.Name)
		}
	}
	return nil
}

// varcharIncrease is isVarcharLengthIncrease: VARCHAR to a longer VARCHAR.
func varcharIncrease(from, to *Column) bool {
	return matrixType(from.Type) == TypeVarchar && matrixType(to.Type) == TypeVarchar && strLen(to) > strLen(from)
}

func keyNames(cols []planCol) []string {
	var out []string
	for _, pc := range cols {
		if pc.key {
			out = append(out, strings.ToLower(pc.c.Name))
		}
	}
	return out
}

// finalAnalyze checks the working schema as a whole (SchemaChangeHandler.finalAnalyze) and
// builds the target schema.
func finalAnalyze(old *TableSchema, cols []planCol, fast bool) (*alterPlan, error) {
	same := len(cols) == len(old.Columns)
	for i := 0; same && i < len(cols); i++ {
		same = cols[i].c.uid == old.Columns[i].uid && sameColumn(&cols[i].c, cols[i].key, &old.Columns[i], i < len(old.Key))
	}
	if same {
		return &alterPlan{noop: true}, nil
	}
	meetValue, hasKey := false, false
	for _, pc := range cols {
		if pc.key && meetValue {
			return nil, fmt.Errorf("Invalid column order. value should be after key. index[%s]", old.Name)
		}
		if pc.key {
			hasKey = true
		} else {
			meetValue = true
		}
	}
	if !hasKey {
		return nil, fmt.Errorf("No key column left. index[%s]", old.Name)
	}
	byUID := map[int]int{}
	for i := range old.Columns {
		byUID[old.Columns[i].uid] = i
	}
	for _, pc := range cols {
		j, ok := byUID[pc.c.uid]
		if !ok || pc.c.uid == 0 {
			continue
		}
		if !sameColumn(&pc.c, pc.key, &old.Columns[j], j < len(old.Key)) {
			if err := checkSchemaChangeAllowed(&old.Columns[j], &pc.c); err != nil {
				return nil, err
			}
		}
	}
	for _, d := range old.distKeys {
		oi := old.ColumnIndex(d)
		i := slices.IndexFunc(cols, func(pc planCol) bool { return strings.EqualFold(pc.c.Name, d) })
		if i < 0 {
			return nil, fmt.Errorf("Distribution column[%s] cannot be dropped. index[%s]", d, old.Name)
		}
		if oi >= 0 && !sameColumn(&cols[i].c, cols[i].key, &old.Columns[oi], oi < len(old.Key)) &&
			!varcharWiden(&old.Columns[oi], oi < len(old.Key), &cols[i].c, cols[i].key) {
			return nil, fmt.Errorf("Can not modify distribution column[%s]. index[%s]", old.Columns[oi].Name, old.Name)
		}
	}
	if old.KeyType != PrimaryKey {
		for _, k := range old.sortKeys {
			if !slices.ContainsFunc(cols, func(pc planCol) bool { return strings.EqualFold(pc.c.Name, k) }) {
				return nil, fmt.Errorf("Sort Key Column[%s] not exists in new schema", k)
			}
		}
	}
	ns := copySchema(old)
	ns.Columns = make([]Column, len(cols))
	ns.Key = ns.Key[:0]
	for i, pc := range cols {
		ns.Columns[i] = pc.c
		if pc.key {
			ns.Key = append(ns.Key, pc.c.Name)
		}
	}
	if err := finishSchema(ns); err != nil {
		return nil, err
	}
	ns.schemaVersion = old.schemaVersion + 1
	return &alterPlan{target: ns, fast: fast}, nil
}

// copySchema is a copy of sc whose slices can be changed without touching sc.
func copySchema(sc *TableSchema) *TableSchema {
	ns := *sc
	ns.Columns = append([]Column(nil), sc.Columns...)
	ns.Key = append([]string(nil), sc.Key...)
	ns.keyIdx = nil
	ns.byName = nil
	ns.version++
	return &ns
}

// analyzerErr is an error of StarRocks's statement analyzer, which quotes where the column
// definition starts and where its last token starts (line 1-based, column 0-based).
func analyzerErr(c *Column, detail string) error {
	return fmt.Errorf("Getting analyzing error from line %d, column %d to line %d, column %d. Detail message: %s",
		c.defStart.line, c.defStart.col-1, c.defLast.line, c.defLast.col-1, detail)
}
