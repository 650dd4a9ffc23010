package emulator

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReviewJSONKeysMatchColumnsByExactName: StarRocks's JSON reader looks
// each object key up in a std::unordered_map<std::string_view, SlotDescriptor*>
// keyed by the plan's column names (be/src/exec/json_scanner.cpp,
// JsonReader::_construct_row_without_jsonpath, _slot_desc_dict.find(key)),
// and a load without a columns header names its source columns after the
// base schema's columns as stored (Load.initColumns): a key whose case
// differs from the column's matches no slot and is skipped, so the column
// gets NULL. The emulator maps keys to columns ignoring case
// (store.TableSchema.ColumnIndex; emulator/store/doc.go "JSON keys map to
// columns case-insensitively"), which keeps a value StarRocks drops — and
// hides the client's matching of source fields to columns ignoring case
// (schemasync's review test).
func TestReviewJSONKeysMatchColumnsByExactName(t *testing.T) {
	e, db := startAlterEmu(t, nil)
	_, err := db.Exec(`CREATE TABLE test.cs (id BIGINT NOT NULL, coupon VARCHAR(8)) PRIMARY KEY(id) DISTRIBUTED BY HASH(id)
  PROPERTIES ("replication_num" = "1")`)
	require.NoError(t, err)
	c := newClient(t, e)
	h := hdrs{"db": "test", "label": "cased", "table": "cs", "format": "json", "strip_outer_array": "true"}
	requireStatus(t, c.begin(h), "OK", "")
	requireStatus(t, c.load(h, `[{"id":1,"coupon":"x"},{"id":2,"Coupon":"y"}]`), "OK", "")
	requireStatus(t, c.commit(h), "OK", "")
	_, rows := queryRows(t, db, "SELECT id, coupon FROM test.cs ORDER BY id")
	assert.Equal(t, [][]string{{"1", "x"}, {"2", "NULL"}}, rows, `the key "Coupon" matches no column: StarRocks skips it`)
}
