package store

import (
	"io"
	"reflect"
	"strings"

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
	return append(names, tablesConfigName), nil
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
	model := map[KeyType]string{PrimaryKey: "PRIMARY_KEYS", DuplicateKey: "DUP_KEYS", UniqueKey: "UNIQUE_KEYS"}[sc.KeyType]
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
