// Package schemasync is the starrocks_txn output's schema manager
// (ARCHITECTURE.md §14): it knows, per StarRocks table, the columns
// StarRocks holds and the row schemas already checked against them, and
// resolves a new one — by the output's schema_evolution mode — into "the
// table takes these rows" (possibly after a change it applied and waited
// for), or an error that poisons the source transaction.
//
// Book.Known is the fast path a row takes under the output's lock: a map
// lookup, no I/O. Book.Resolve is the slow path, run outside any lock of the
// output: it reads information_schema, runs DDL and polls the schema-change
// job until StarRocks reports it FINISHED.
package schemasync
