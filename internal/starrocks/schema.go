package starrocks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
)

// What the output asks the FE over its MySQL port to change a table's
// schema in step with the source (ARCHITECTURE.md §14): a table's columns
// (information_schema.columns), the schema-change statements themselves,
// and the state of the schema-change jobs they start (SHOW ALTER TABLE
// COLUMN, docs/notes/starrocks-protocol.md §11.2).

// Columns reads the columns of db.table in order, with the primary key
// (COLUMN_KEY PRI). found is false when the table does not exist.
func (m *Meta) Columns(ctx context.Context, db, table string) (t *schema.Table, found bool, err error) {
	if err := checkIdents(db, table); err != nil {
		return nil, false, err
	}
	ctx, end := m.bound(ctx, "columns", db)
	defer func() { end(err == nil) }()
	rows, err := m.db.QueryContext(ctx,
		"SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COLUMN_DEFAULT, COLUMN_KEY, COLUMN_COMMENT FROM information_schema.columns WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION",
		db, table)
	if err != nil {
		return nil, false, fmt.Errorf("reading the columns of %s.%s: %w", db, table, err)
	}
	defer rows.Close()
	t = &schema.Table{}
	for rows.Next() {
		var name, typ, nullable string
		var def, key, comment sql.NullString
		if err := rows.Scan(&name, &typ, &nullable, &def, &key, &comment); err != nil {
			return nil, false, fmt.Errorf("reading the columns of %s.%s: %w", db, table, err)
		}
		ty, err := schema.ParseType(typ)
		if err != nil {
			return nil, false, fmt.Errorf("reading the columns of %s.%s: column %s: %w", db, table, name, err)
		}
		c := schema.Column{Name: name, Type: ty, Nullable: strings.EqualFold(nullable, "YES"), Comment: comment.String}
		if def.Valid {
			v := def.String
			c.Default = &v
		}
		t.Columns = append(t.Columns, c)
		if strings.EqualFold(key.String, "PRI") {
			t.Key = append(t.Key, name)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("reading the columns of %s.%s: %w", db, table, err)
	}
	return t, len(t.Columns) > 0, nil
}

// DDLError is a schema-change statement the FE refused: it changed
// nothing, and sending it again changes nothing either.
type DDLError struct {
	Statement string
	Number    uint16
	Message   string
}

func (e *DDLError) Error() string {
	return fmt.Sprintf("StarRocks refused %s (error %d): %s", e.Statement, e.Number, e.Message)
}

// ExecDDL runs one schema-change statement (CREATE DATABASE, CREATE TABLE,
// ALTER TABLE) within the call bound. A refusal by the FE is a *DDLError;
// any other error (a connection reset, a timeout) leaves it unknown whether
// the statement took effect, and the caller finds out from the table.
func (m *Meta) ExecDDL(ctx context.Context, db, stmt string) (err error) {
	ctx, end := m.bound(ctx, "ddl", db)
	defer func() { end(err == nil || isRefusal(err)) }()
	if _, err := m.db.ExecContext(ctx, stmt); err != nil {
		var me *mysql.MySQLError
		if errors.As(err, &me) {
			return &DDLError{Statement: firstLine(stmt), Number: me.Number, Message: me.Message}
		}
		return fmt.Errorf("running %s: %w", firstLine(stmt), err)
	}
	return nil
}

func isRefusal(err error) bool {
	var de *DDLError
	return errors.As(err, &de)
}

// firstLine is a statement's first line, for messages.
func firstLine(stmt string) string {
	if i := strings.IndexByte(stmt, '\n'); i >= 0 {
		return stmt[:i] + " …"
	}
	return stmt
}

// Schema-change job states (SHOW ALTER TABLE COLUMN, State).
const (
	JobPending    = "PENDING"
	JobWaitingTxn = "WAITING_TXN"
	JobRunning    = "RUNNING"
	JobFinished   = "FINISHED"
	JobCancelled  = "CANCELLED"
)

// AlterJob is one row of SHOW ALTER TABLE COLUMN.
type AlterJob struct {
	ID         string
	Table      string
	CreateTime string
	FinishTime string
	State      string
	Msg        string
}

// Final reports whether the job will not change state again.
func (j AlterJob) Final() bool { return j.State == JobFinished || j.State == JobCancelled }

// AlterJobs returns the newest schema-change jobs of db.table, newest
// first, at most limit.
func (m *Meta) AlterJobs(ctx context.Context, db, table string, limit int) (jobs []AlterJob, err error) {
	if err := checkIdents(db, table); err != nil {
		return nil, err
	}
	ctx, end := m.bound(ctx, "alter_jobs", db)
	defer func() { end(err == nil) }()
	q := fmt.Sprintf("SHOW ALTER TABLE COLUMN FROM `%s` WHERE TableName = \"%s\" ORDER BY CreateTime DESC LIMIT %d", db, table, max(limit, 1))
	rows, err := m.db.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("reading the schema-change jobs of %s.%s: %w", db, table, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, fmt.Errorf("reading the schema-change jobs of %s.%s: %w", db, table, err)
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("reading the schema-change jobs of %s.%s: %w", db, table, err)
		}
		var j AlterJob
		for i, c := range cols {
			switch strings.ToLower(c) {
			case "jobid":
				j.ID = vals[i].String
			case "tablename":
				j.Table = vals[i].String
			case "createtime":
				j.CreateTime = vals[i].String
			case "finishtime":
				j.FinishTime = vals[i].String
			case "state":
				j.State = strings.ToUpper(vals[i].String)
			case "msg":
				j.Msg = vals[i].String
			}
		}
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the schema-change jobs of %s.%s: %w", db, table, err)
	}
	return jobs, nil
}

// Version returns the StarRocks version the FE reports (select
// current_version(): "<version>-<commit>", docs/notes/starrocks-protocol.md
// §12.2), without the commit: "3.3.7".
func (m *Meta) Version(ctx context.Context) (v string, err error) {
	ctx, end := m.bound(ctx, "version", "")
	defer func() { end(err == nil) }()
	if err := m.db.QueryRowContext(ctx, "SELECT current_version()").Scan(&v); err != nil {
		return "", fmt.Errorf("asking the FE's version (select current_version()): %w", err)
	}
	if f := strings.Fields(v); len(f) > 0 {
		v = f[0]
	}
	if i := strings.IndexByte(v, '-'); i > 0 {
		v = v[:i]
	}
	return v, nil
}
