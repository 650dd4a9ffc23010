package store

import (
	"io"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
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
	return d.Database.GetTableInsensitive(ctx, name)
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
