package store

import (
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/information_schema"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// infoSchema adds StarRocks' information_schema.tables_config to go-mysql-server's
// information_schema, so clients can ask a table's model (TABLE_MODEL = PRIMARY_KEYS,
// DUP_KEYS or UNIQUE_KEYS, the FE's KeysType names) as they would on StarRocks.
type infoSchema struct {
	sql.Database
	bridge *sqlBridge
}

const tablesConfigName = "tables_config"

func (d *infoSchema) GetTableInsensitive(ctx *sql.Context, name string) (sql.Table, bool, error) {
	if strings.EqualFold(name, tablesConfigName) {
		return &tablesConfigTable{snap: d.bridge.snapFor(ctx)}, true, nil
	}
	if strings.EqualFold(name, columnsName) {
		return &columnsTable{snap: d.bridge.snapFor(ctx)}, true, nil
	}
	if strings.EqualFold(name, loadsName) {
		return &virtualTable{name: loadsName, schema: loadsSchema, rows: d.loadsRows}, true, nil
	}
	if strings.EqualFold(name, trackingLogsName) {
		return &virtualTable{name: trackingLogsName, schema: trackingLogsSchema, rows: d.trackingRows}, true, nil
	}
	t, ok, err := d.Database.GetTableInsensitive(ctx, name)
	if !ok || err != nil {
		return t, ok, err
	}
	return ownCopy(t), true, nil
}

// ownCopy gives a query its own copy of a catalog table. go-mysql-server keeps one instance
// of each information_schema table for every session, and planning a query that reads it
// stores the catalog into that shared instance (sql.CatalogTable.AssignCatalog) while other
// queries' plans read it: a data race whenever two such queries run at once. A copy per
// lookup makes the write private; the copy shares the schema and the reader function, which
// nothing writes.
func ownCopy(t sql.Table) sql.Table {
	if _, ok := t.(sql.CatalogTable); !ok {
		return t
	}
	v := reflect.ValueOf(t)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return t
	}
	cp := reflect.New(v.Elem().Type())
	cp.Elem().Set(v.Elem())
	// A table that embeds *InformationSchemaTable (the statistics tables) assigns the
	// catalog into the embedded one: copy that too.
	for i := 0; i < cp.Elem().NumField(); i++ {
		f := cp.Elem().Field(i)
		if f.CanSet() && f.Type() == reflect.TypeFor[*information_schema.InformationSchemaTable]() && !f.IsNil() {
			inner := *f.Interface().(*information_schema.InformationSchemaTable)
			f.Set(reflect.ValueOf(&inner))
		}
	}
	out, ok := cp.Interface().(sql.Table)
	if !ok {
		return t
	}
	return out
}

func (d *infoSchema) GetTableNames(ctx *sql.Context) ([]string, error) {
	names, err := d.Database.GetTableNames(ctx)
	if err != nil {
		return nil, err
	}
	return append(names, tablesConfigName, loadsName, trackingLogsName), nil
}

const (
	loadsName        = "loads"
	trackingLogsName = "load_tracking_logs"
)

func schemaOf(table string, cols ...string) sql.Schema {
	s := make(sql.Schema, len(cols))
	for i, c := range cols {
		typ := sql.Type(types.LongText)
		if strings.HasSuffix(c, "_ROWS") || strings.HasSuffix(c, "_BYTES") || c == "ID" || c == "JOB_ID" || c == "PROFILE_ID" {
			typ = types.Int64
		}
		if strings.HasSuffix(c, "_TIME") {
			typ = types.Datetime
		}
		s[i] = &sql.Column{Name: c, Type: typ, Nullable: true, Source: table, DatabaseSource: "information_schema"}
	}
	return s
}

// loadsSchema is information_schema.loads as StarRocks 4.0 documents it.
var loadsSchema = schemaOf(loadsName, "ID", "LABEL", "PROFILE_ID", "DB_NAME", "TABLE_NAME", "USER", "WAREHOUSE",
	"STATE", "PROGRESS", "TYPE", "PRIORITY", "SCAN_ROWS", "SCAN_BYTES", "FILTERED_ROWS", "UNSELECTED_ROWS",
	"SINK_ROWS", "RUNTIME_DETAILS", "CREATE_TIME", "LOAD_START_TIME", "LOAD_COMMIT_TIME", "LOAD_FINISH_TIME",
	"PROPERTIES", "ERROR_MSG", "TRACKING_SQL", "REJECTED_RECORD_PATH", "JOB_ID")

// trackingLogsSchema is information_schema.load_tracking_logs: the rejected rows of a load.
var trackingLogsSchema = schemaOf(trackingLogsName, "ID", "JOB_ID", "LABEL", "DATABASE_NAME", "TRACKING_LOG", "TYPE")

func sqlTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.Local()
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (d *infoSchema) loadsRows() []sql.Row {
	if d.bridge.sys == nil {
		return nil
	}
	var rows []sql.Row
	for _, l := range d.bridge.sys.Loads() {
		var tracking any
		if len(l.TrackingLog) > 0 {
			tracking = fmt.Sprintf("select tracking_log from information_schema.load_tracking_logs where job_id=%d", l.ID)
		}
		rows = append(rows, sql.Row{l.ID, l.Label, nil, l.DB, l.Table, l.User, "default_warehouse",
			l.State, nil, l.Type, "NORMAL", l.ScanRows, l.ScanBytes, l.Filtered, l.Unselected,
			l.SinkRows, nil, sqlTime(l.Create), sqlTime(l.LoadStart), sqlTime(l.LoadCommit), sqlTime(l.LoadFinish),
			nullIfEmpty(l.Properties), nullIfEmpty(l.ErrorMsg), tracking, nil, l.JobID})
	}
	return rows
}

func (d *infoSchema) trackingRows() []sql.Row {
	if d.bridge.sys == nil {
		return nil
	}
	var rows []sql.Row
	for _, l := range d.bridge.sys.Loads() {
		if len(l.TrackingLog) == 0 {
			continue
		}
		rows = append(rows, sql.Row{l.ID, l.ID, l.Label, l.DB, strings.Join(l.TrackingLog, "\n"), l.Type})
	}
	return rows
}

// virtualTable is an information_schema table computed when it is read.
type virtualTable struct {
	name   string
	schema sql.Schema
	rows   func() []sql.Row
}

func (t *virtualTable) Name() string               { return t.name }
func (t *virtualTable) String() string             { return t.name }
func (t *virtualTable) Schema() sql.Schema         { return t.schema }
func (t *virtualTable) Collation() sql.CollationID { return sql.Collation_Default }
func (t *virtualTable) Partitions(*sql.Context) (sql.PartitionIter, error) {
	return sql.PartitionsToPartitionIter(onePartition{}), nil
}

func (t *virtualTable) PartitionRows(*sql.Context, sql.Partition) (sql.RowIter, error) {
	return &sliceRowIter{rows: t.rows()}, nil
}

var tablesConfigSchema = func() sql.Schema {
	str := types.LongText
	cols := []struct {
		name string
		typ  sql.Type
	}{
		{"TABLE_SCHEMA", str}, {"TABLE_NAME", str}, {"TABLE_ENGINE", str}, {"TABLE_MODEL", str},
		{"PRIMARY_KEY", str}, {"PARTITION_KEY", str}, {"DISTRIBUTE_KEY", str}, {"DISTRIBUTE_TYPE", str},
		{"DISTRIBUTE_BUCKET", types.Int32}, {"SORT_KEY", str}, {"PROPERTIES", str}, {"TABLE_ID", types.Int64},
	}
	s := make(sql.Schema, len(cols))
	for i, c := range cols {
		s[i] = &sql.Column{Name: c.name, Type: c.typ, Source: tablesConfigName, DatabaseSource: "information_schema"}
	}
	return s
}()

type tablesConfigTable struct{ snap *snapshot }

func (t *tablesConfigTable) Name() string               { return tablesConfigName }
func (t *tablesConfigTable) String() string             { return tablesConfigName }
func (t *tablesConfigTable) Schema() sql.Schema         { return tablesConfigSchema }
func (t *tablesConfigTable) Collation() sql.CollationID { return sql.Collation_Default }
func (t *tablesConfigTable) Partitions(*sql.Context) (sql.PartitionIter, error) {
	return sql.PartitionsToPartitionIter(onePartition{}), nil
}

func (t *tablesConfigTable) PartitionRows(*sql.Context, sql.Partition) (sql.RowIter, error) {
	var rows []sql.Row
	for _, d := range t.snap.dbs {
		for _, tb := range d.tables {
			rows = append(rows, tablesConfigRow(tb.schema))
		}
	}
	return &sliceRowIter{rows: rows}, nil
}

// tablesConfigRow renders one table the way StarRocks' FE fills tables_config.
func tablesConfigRow(sc *TableSchema) sql.Row {
	model := map[KeyType]string{PrimaryKey: "PRIMARY_KEYS", DuplicateKey: "DUP_KEYS", UniqueKey: "UNIQUE_KEYS", AggregateKey: "AGG_KEYS"}[sc.KeyType]
	pk := ""
	if sc.KeyType == PrimaryKey || sc.KeyType == UniqueKey {
		pk = quoteJoin(sc.Key)
	}
	sortKey := sc.sortKeys
	if len(sortKey) == 0 {
		sortKey = sc.Key
	}
	var props []string
	for _, p := range sc.properties {
		props = append(props, `"`+p[0]+`":"`+p[1]+`"`)
	}
	return sql.Row{sc.DB, sc.Name, "OLAP", model, pk, "", quoteJoin(sc.distKeys), sc.distType, int32(sc.buckets),
		quoteJoin(sortKey), "{" + strings.Join(props, ",") + "}", sc.ID}
}

func quoteJoin(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "`" + n + "`"
	}
	return strings.Join(q, ", ")
}

type sliceRowIter struct {
	rows []sql.Row
	i    int
}

func (it *sliceRowIter) Next(*sql.Context) (sql.Row, error) {
	if it.i >= len(it.rows) {
		return nil, io.EOF
	}
	it.i++
	return it.rows[it.i-1], nil
}

func (it *sliceRowIter) Close(*sql.Context) error { return nil }
