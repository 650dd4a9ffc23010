package schemasync

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// fakeMeta is a StarRocks catalogue in memory whose ALTERs run as jobs:
// each ALTER makes a job that needs `steps` polls of the job list to
// finish (0: it is FINISHED at once), and its change shows in the columns
// only then, as in StarRocks.
type fakeMeta struct {
	mu     sync.Mutex
	tables map[string]*schema.Table
	jobs   map[string][]*fakeJob
	nextID int
	// steps is how many polls a new job takes to finish.
	steps int
	// cancel makes the next job end CANCELLED with this message.
	cancel string
	// refuse makes every DDL matching the key fail with the value.
	refuse map[string]string
	// lostReply makes the next DDL take effect and fail as a lost reply.
	lostReply bool
	// failColumns fails the next n column reads.
	failColumns int
	ddl         []string
}

type fakeJob struct {
	starrocks.AlterJob
	left  int
	apply func()
}

func newFakeMeta() *fakeMeta {
	return &fakeMeta{tables: map[string]*schema.Table{}, jobs: map[string][]*fakeJob{}, refuse: map[string]string{}}
}

func (f *fakeMeta) Columns(_ context.Context, db, table string) (*schema.Table, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failColumns > 0 {
		f.failColumns--
		return nil, false, errors.New("connection reset")
	}
	t, ok := f.tables[db+"."+table]
	if !ok {
		return &schema.Table{}, false, nil
	}
	c := *t
	c.Columns = append([]schema.Column(nil), t.Columns...)
	return &c, true, nil
}

func (f *fakeMeta) ExecDDL(_ context.Context, db, stmt string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ddl = append(f.ddl, stmt)
	for k, msg := range f.refuse {
		if strings.Contains(stmt, k) {
			return &starrocks.DDLError{Statement: stmt, Number: 1064, Message: msg}
		}
	}
	lost := f.lostReply
	f.lostReply = false
	var err error
	switch {
	case strings.HasPrefix(stmt, "CREATE TABLE"):
		err = f.create(db, stmt)
	case strings.HasPrefix(stmt, "ALTER TABLE"):
		err = f.alter(db, stmt)
	default:
		err = fmt.Errorf("fake: unknown statement %s", stmt)
	}
	if err == nil && lost {
		return errors.New("invalid connection")
	}
	return err
}

// The fake reads back only what schema's DDL writes.
func (f *fakeMeta) create(db, stmt string) error {
	name := between(stmt, "`.`", "`")
	if _, ok := f.tables[db+"."+name]; ok {
		return nil
	}
	t := &schema.Table{}
	body := stmt[strings.Index(stmt, "(\n")+2 : strings.Index(stmt, "\n) ENGINE")]
	for _, line := range strings.Split(body, ",\n") {
		t.Columns = append(t.Columns, parseDef(strings.TrimSpace(line)))
	}
	keys := between(stmt, "PRIMARY KEY(", ")")
	for _, k := range strings.Split(keys, ", ") {
		t.Key = append(t.Key, strings.Trim(k, "`"))
	}
	f.tables[db+"."+name] = t
	return nil
}

func (f *fakeMeta) alter(db, stmt string) error {
	name := between(stmt, "`.`", "`")
	key := db + "." + name
	t, ok := f.tables[key]
	if !ok {
		return &starrocks.DDLError{Statement: stmt, Number: 1064, Message: "Unknown table " + name}
	}
	for _, j := range f.jobs[key] {
		if !j.Final() {
			return &starrocks.DDLError{Statement: stmt, Number: 1064, Message: fmt.Sprintf("Table[%s]'s state(SCHEMA_CHANGE) is not NORMAL. Do not allow doing ALTER ops", name)}
		}
	}
	var apply func()
	switch {
	case strings.Contains(stmt, " ADD COLUMN ("):
		defs := stmt[strings.Index(stmt, "ADD COLUMN (")+len("ADD COLUMN (") : len(stmt)-1]
		// Types carry parentheses: split on the column quotes.
		var cols []schema.Column
		for _, d := range splitDefs(defs) {
			c := parseDef(d)
			if _, exists := t.Column(c.Name); exists {
				return &starrocks.DDLError{Statement: stmt, Number: 1064, Message: "Can not add column which already exists in column id: " + c.Name}
			}
			cols = append(cols, c)
		}
		apply = func() { t.Columns = append(t.Columns, cols...) }
	case strings.Contains(stmt, " MODIFY COLUMN "):
		c := parseDef(stmt[strings.Index(stmt, "MODIFY COLUMN ")+len("MODIFY COLUMN "):])
		apply = func() {
			for i := range t.Columns {
				if t.Columns[i].Name == c.Name {
					t.Columns[i].Type = c.Type
				}
			}
		}
	default:
		return fmt.Errorf("fake: unknown ALTER %s", stmt)
	}
	f.nextID++
	j := &fakeJob{AlterJob: starrocks.AlterJob{ID: fmt.Sprint(f.nextID), Table: name, State: starrocks.JobPending}, left: f.steps, apply: apply}
	if f.cancel != "" {
		j.Msg, f.cancel = f.cancel, ""
		j.apply = nil
	}
	f.jobs[key] = append(f.jobs[key], j)
	f.advance(j)
	return nil
}

func (f *fakeMeta) advance(j *fakeJob) {
	if j.Final() {
		return
	}
	if j.left > 0 {
		j.left--
		j.State = starrocks.JobRunning
		return
	}
	if j.apply == nil {
		j.State = starrocks.JobCancelled
		return
	}
	j.apply()
	j.State = starrocks.JobFinished
}

func (f *fakeMeta) AlterJobs(_ context.Context, db, table string, limit int) ([]starrocks.AlterJob, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	js := f.jobs[db+"."+table]
	var out []starrocks.AlterJob
	for i := len(js) - 1; i >= 0 && len(out) < limit; i-- {
		out = append(out, js[i].AlterJob)
		f.advance(js[i])
	}
	return out, nil
}

func (f *fakeMeta) set(db, table string, t *schema.Table) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tables[db+"."+table] = t
}

func (f *fakeMeta) statements() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ddl...)
}

func between(s, a, b string) string {
	i := strings.Index(s, a)
	if i < 0 {
		return ""
	}
	s = s[i+len(a):]
	if j := strings.Index(s, b); j >= 0 {
		return s[:j]
	}
	return s
}

func splitDefs(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ", `") {
		if !strings.HasPrefix(part, "`") {
			part = "`" + part
		}
		out = append(out, part)
	}
	return out
}

// parseDef reads "`name` TYPE [NOT ]NULL …".
func parseDef(d string) schema.Column {
	name := between(d, "`", "`")
	rest := strings.Fields(d[len(name)+2:])
	return schema.Column{Name: name, Type: schema.MustType(rest[0]), Nullable: !strings.Contains(d, "NOT NULL")}
}
