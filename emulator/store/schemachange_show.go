package store

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dolthub/vitess/go/sqltypes"
)

// SHOW ALTER TABLE COLUMN and CANCEL ALTER TABLE COLUMN (schemachange.go has the jobs).

// schemaChangeColumns are SchemaChangeProcDir.TITLE_NAMES.
var schemaChangeColumns = []string{"JobId", "TableName", "CreateTime", "FinishTime", "IndexName", "IndexId",
	"OriginIndexId", "SchemaVersion", "TransactionId", "State", "Msg", "Progress", "Timeout"}

// jobRow is one job as SchemaChangeJobV2.getInfo prints it: FinishTime NULL until the job
// is final, TransactionId -1 until it took its watershed, Progress finished/total tasks while
// RUNNING (the emulator's one tablet: 0/1) and NULL otherwise, Timeout in seconds.
func jobRow(j AlterJob) []*string {
	var finish, progress *string
	if j.State.final() {
		finish = timeCell(j.Finished)
	}
	if j.State == JobRunning {
		progress = str("0/1")
	}
	return []*string{num(j.ID), str(j.Table), timeCell(j.CreateTime), finish, str(j.Table), num(j.IndexID),
		num(j.OriginIndex), str(fmt.Sprintf("%d:%d", j.SchemaVersion, j.SchemaHash)), num(j.TransactionID),
		str(string(j.State)), str(j.Msg), progress, num(int64(j.Timeout.Seconds()))}
}

// showAlter is SHOW ALTER TABLE COLUMN [FROM db] [WHERE TableName|State = 'x' | CreateTime|
// FinishTime op 'time' [AND …]] [ORDER BY col [ASC|DESC], …] [LIMIT [offset,] n | LIMIT n
// OFFSET m].
func (h *ddlHandler) showAlter(p *parser, cur string) (*sqltypes.Result, error) {
	const usage = "the emulator knows SHOW ALTER TABLE COLUMN [FROM db] [WHERE …] [ORDER BY …] [LIMIT n] (it has no rollups or materialized views)"
	if p.expect("alter") != nil || p.expect("table") != nil || !p.accept("column") {
		return nil, sysErr("%s", usage)
	}
	db := cur
	if p.accept("from") || p.accept("in") {
		name, err := p.ident("a database name")
		if err != nil {
			return nil, sysErr("%s", err.Error())
		}
		db = name
	}
	var filters []func([]*string) bool
	if p.accept("where") {
		for {
			f, err := p.showAlterFilter()
			if err != nil {
				return nil, err
			}
			filters = append(filters, f)
			if !p.accept("and") {
				break
			}
		}
	}
	var order []func(a, b []*string) int
	if p.accept("order") {
		if err := p.expect("by"); err != nil {
			return nil, sysErr("%s", usage)
		}
		for {
			name, err := p.ident("a column name")
			if err != nil {
				return nil, sysErr("%s", err.Error())
			}
			ci := slices.IndexFunc(schemaChangeColumns, func(c string) bool { return strings.EqualFold(c, name) })
			if ci < 0 {
				return nil, sysErr("Title name[%s] does not exist", name)
			}
			desc := p.accept("desc")
			if !desc {
				p.accept("asc")
			}
			order = append(order, func(a, b []*string) int {
				c := compareCells(a[ci], b[ci])
				if desc {
					return -c
				}
				return c
			})
			if !p.acceptPunct(",") {
				break
			}
		}
	}
	offset, limit := 0, -1
	if p.accept("limit") {
		n1, err := p.number()
		if err != nil {
			return nil, sysErr("%s", err.Error())
		}
		limit = n1
		switch {
		case p.acceptPunct(","):
			n2, err := p.number()
			if err != nil {
				return nil, sysErr("%s", err.Error())
			}
			offset, limit = n1, n2
		case p.accept("offset"):
			n2, err := p.number()
			if err != nil {
				return nil, sysErr("%s", err.Error())
			}
			offset = n2
		}
	}
	if p.done() != nil {
		return nil, sysErr("%s", usage)
	}
	if db == "" {
		return nil, sysErr("No database selected")
	}
	s := h.bridge.store
	d, ok := s.snap().db(db)
	if !ok {
		return nil, sysErr("Unknown database '%s'", db)
	}
	var rows [][]*string
	for _, j := range s.AlterJobs() {
		if !strings.EqualFold(j.DB, d.name) {
			continue
		}
		r := jobRow(j)
		keep := true
		for _, f := range filters {
			keep = keep && f(r)
		}
		if keep {
			rows = append(rows, r)
		}
	}
	if len(order) > 0 {
		slices.SortStableFunc(rows, func(a, b []*string) int {
			for _, o := range order {
				if c := o(a, b); c != 0 {
					return c
				}
			}
			return 0
		})
	}
	if offset > len(rows) {
		offset = len(rows)
	}
	rows = rows[offset:]
	if limit >= 0 && limit < len(rows) {
		rows = rows[:limit]
	}
	return textResult(schemaChangeColumns, rows), nil
}

// showAlterFilter reads one condition of SHOW ALTER's WHERE (ShowAlterStmt.analyzeSubPredicate:
// TableName and State compare for equality, CreateTime and FinishTime with any comparison).
func (p *parser) showAlterFilter() (func([]*string) bool, error) {
	const only = "The columns of TableName/CreateTime/FinishTime/State are supported."
	name, err := p.ident("a column name")
	if err != nil {
		return nil, sysErr("%s", only)
	}
	var op string
	for _, o := range []string{"!=", "<>", "<=", ">=", "=", "<", ">"} {
		if p.acceptOp(o) {
			op = o
			break
		}
	}
	v := p.next()
	col := map[string]int{"tablename": 1, "createtime": 2, "finishtime": 3, "state": 9}[strings.ToLower(name)]
	if col == 0 {
		return nil, sysErr("%s", only)
	}
	if op == "" || v.kind != tokString {
		return nil, sysErr("Where clause should looks like: TableName = \"your_table_name\", or State = \"FINISHED|CANCELLED|RUNNING|PENDING|WAITING_TXN\", or CreateTime|FinishTime >|>=|<|<=|=|!= \"2019-12-02|2019-12-02 14:54:00\"")
	}
	if (col == 1 || col == 9) && op != "=" && op != "!=" && op != "<>" {
		return nil, sysErr("Only operator = and != are supported for %s", name)
	}
	want := v.text
	return func(r []*string) bool {
		c := 1
		if r[col] != nil {
			c = strings.Compare(strings.ToLower(*r[col]), strings.ToLower(want))
			if col == 2 || col == 3 {
				c = strings.Compare((*r[col])[:min(len(*r[col]), len(want))], want)
			}
		} else if op != "!=" && op != "<>" {
			return false
		}
		switch op {
		case "=":
			return c == 0
		case "!=", "<>":
			return c != 0
		case "<":
			return c < 0
		case "<=":
			return c <= 0
		case ">":
			return c > 0
		default:
			return c >= 0
		}
	}, nil
}

// compareCells orders SHOW cells: numbers by value, text by text, NULL first.
func compareCells(a, b *string) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	x, err1 := strconv.ParseInt(*a, 10, 64)
	y, err2 := strconv.ParseInt(*b, 10, 64)
	if err1 == nil && err2 == nil {
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	return strings.Compare(*a, *b)
}

// cancelAlter is CANCEL ALTER TABLE COLUMN FROM [db.]t: the table's unfinished job ends
// CANCELLED "user cancelled" and the table keeps its schema.
func (h *ddlHandler) cancelAlter(p *parser, cur string) (*sqltypes.Result, error) {
	const usage = "the emulator knows CANCEL ALTER TABLE COLUMN FROM [db.]table (it has no rollups or materialized views)"
	if p.expect("cancel") != nil || p.expect("alter") != nil || p.expect("table") != nil || !p.accept("column") || p.expect("from") != nil {
		return nil, sysErr("%s", usage)
	}
	db, name, err := p.qualifiedName("a table name")
	if err != nil || p.done() != nil {
		return nil, sysErr("%s", usage)
	}
	if db == "" {
		db = cur
	}
	if db == "" {
		return nil, sysErr("No database selected")
	}
	s := h.bridge.store
	s.mu.Lock()
	err = s.cancelAlterLocked(db, name)
	s.mu.Unlock()
	if err != nil {
		return nil, sysErr("%s", err.Error())
	}
	return &sqltypes.Result{}, nil
}
