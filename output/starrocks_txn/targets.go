package starrocks_txn

import (
	"strings"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
)

// The defaults of database and table: the contract's keys, as the
// assembler (or a hand-written mapping) set them.
const (
	defaultDatabase = "${! @" + contract.KeyDatabase + " }"
	defaultTable    = "${! @" + contract.KeyTable + " }"
)

// rawIs reports whether the interpolated string field is written exactly as
// want (surrounding white space aside).
func rawIs(conf *service.ParsedConfig, field, want string) bool {
	raw, err := conf.FieldString(field)
	return err == nil && strings.TrimSpace(raw) == want
}

// batchTargets resolves the database and table fields for the messages of one
// batch.
type batchTargets struct {
	db, table *service.MessageBatchInterpolationExecutor
}

// target returns the message's database and table. A field left at its
// default is the contract key's value, which parseContract already read
// with the metadata's own string form (the one the interpolation renders
// too): it is taken from there, without running the interpolation per
// message, when the key is set; an unset key goes through the
// interpolation, as before (TestDefaultTargetsEqualTheInterpolation).
func (o *Output) target(targets batchTargets, i int, meta contract.Meta) (db, table string, dbErr, tableErr error) {
	if o.conf.dbFromContract && meta.Database != "" {
		db = meta.Database
	} else {
		db, dbErr = targets.db.TryString(i)
	}
	if o.conf.tableFromContract && meta.Table != "" {
		table = meta.Table
	} else {
		table, tableErr = targets.table.TryString(i)
	}
	return db, table, dbErr, tableErr
}
