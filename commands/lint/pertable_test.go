package lint

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// transaction_mode per_table without writer rows is a warning at its line
// explaining what a crash then leaves; with writer rows, exactly_once, or
// another mode, nothing. prepared_timeout with multi_table warns that
// nothing reads it.
func TestTransactionModeWarnings(t *testing.T) {
	const head = "input:\n  stdin: {}\noutput:\n  starrocks_txn:\n    load_urls: [ http://fe:8030 ]\n"
	perTable := fmt.Sprintf(msgPerTableWithoutDecision, "per_table")
	for _, tc := range []struct {
		name, conf string
		want       string
		line       int
	}{
		{"per_table without writer rows", head + "    transaction_mode: per_table\n", perTable, 6},
		{"per_table with only mysql_address", head + "    transaction_mode: per_table\n    mysql_address: fe:9030\n", perTable, 6},
		{"per_table with writer rows", head + "    transaction_mode: per_table\n    mysql_address: fe:9030\n    pipeline_id: p\n", "", 0},
		{"per_table exactly_once", head + "    transaction_mode: per_table\n    semantic: exactly_once\n    mysql_address: fe:9030\n    pipeline_id: p\n", "", 0},
		{"auto", head, "", 0},
		{"multi_table", head + "    transaction_mode: multi_table\n", "", 0},
		{"prepared_timeout with multi_table", head + "    transaction_mode: multi_table\n    prepared_timeout: 1h\n", msgPreparedTimeoutUnused, 7},
		{"prepared_timeout with per_table", head + "    transaction_mode: per_table\n    prepared_timeout: 1h\n    mysql_address: fe:9030\n    pipeline_id: p\n", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps, err := CheckCycleYAML([]byte(tc.conf))
			require.NoError(t, err)
			if tc.want == "" {
				assert.Empty(t, ps)
				return
			}
			require.Len(t, ps, 1)
			assert.Equal(t, tc.line, ps[0].Line)
			assert.Equal(t, "warning: "+tc.want, ps[0].What)
		})
	}
}
