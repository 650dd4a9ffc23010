package store

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

const ordersDDL = "CREATE TABLE `test`.`orders` (`order_id` BIGINT NOT NULL, `customer_id` BIGINT NOT NULL, `total_amount` DECIMAL(10,2) DEFAULT \"0\", `order_status` VARCHAR(32) DEFAULT \"\") ENGINE=OLAP PRIMARY KEY(`order_id`) DISTRIBUTED BY HASH(`order_id`) PROPERTIES(\"replication_num\" = \"1\");"

// schemaStore returns a store loaded with examples/schema.sql.
func schemaStore(t testing.TB) *Store {
	t.Helper()
	b, err := os.ReadFile("../../examples/schema.sql")
	require.NoError(t, err)
	s := New()
	require.NoError(t, s.ExecScript(string(b)))
	return s
}

func jsonParams(extra map[string]string) LoadParams {
	h := map[string]string{"format": "json", "strip_outer_array": "true"}
	for k, v := range extra {
		h[k] = v
	}
	p, err := ParseLoadParams(h)
	if err != nil {
		panic(err)
	}
	return p
}

// load parses body and applies it, failing the test on a parse error.
func load(t testing.TB, s *Store, db, table, body string, p LoadParams) *Parsed {
	t.Helper()
	res, err := s.Parse(db, table, []byte(body), p)
	require.NoError(t, err)
	require.NoError(t, s.Apply([]TableChange{{DB: db, Table: table, Rows: res.Rows}}))
	return res
}
