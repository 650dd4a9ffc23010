// Package store is the StarRocks emulator's table model: a parser for the StarRocks DDL
// subset, the stream-load row conversion rules (JSON and CSV), multi-version storage with
// atomic multi-table commits, and a MySQL-protocol server (go-mysql-server) over the
// committed data. The HTTP transaction protocol lives in package emulator and calls this
// package: ParseLoadParams and Parse for every load, Apply once per commit.
//
// # DDL
//
// ExecScript/ExecDDL accept CREATE DATABASE [IF NOT EXISTS], CREATE TABLE [IF NOT EXISTS]
// in StarRocks syntax (ENGINE=OLAP, PRIMARY|DUPLICATE|UNIQUE|AGGREGATE KEY, COMMENT, PARTITION
// BY, DISTRIBUTED BY, ORDER BY, PROPERTIES; the physical clauses are validated for syntax and
// otherwise ignored; a property StarRocks does not know is refused, "Unknown properties: {k=v}"),
// ALTER TABLE … ADD COLUMN col_def [FIRST | AFTER col] / ADD COLUMN (…) / DROP COLUMN col /
// MODIFY COLUMN col_def [FIRST | AFTER col] (comma-separated; StarRocks's refusals and texts;
// schemachange_plan.go), DROP TABLE / DROP DATABASE [IF EXISTS] [FORCE], TRUNCATE TABLE and
// USE. A column ALTER is a schema change job as StarRocks runs it (schemachange.go): on a table
// with fast_schema_evolution (the default, FE config enable_fast_schema_evolution) an ADD or
// DROP of value columns and a VARCHAR widening change the schema at once and leave a FINISHED
// job; any other change is a job that waits in WAITING_TXN for the transactions begun before
// it on the table (TxnOracle), is RUNNING for a while, then FINISHED (the new schema visible,
// older rows converted) or CANCELLED (CANCEL ALTER, the timeout, a failed conversion, a
// JobFault). Rows loaded under an older schema take the table's schema at commit (remap.go);
// a load keeps the schema it was planned with, so a key for a column not yet there is lost. Key columns must lead the column list
// in key order (StarRocks' rule, with its error text); PRIMARY KEY columns must be NOT NULL;
// FLOAT/DOUBLE/JSON/ARRAY/MAP cannot be key columns. AGGREGATE KEY value columns carry SUM,
// MAX, MIN, REPLACE or REPLACE_IF_NOT_NULL. Constructs the emulator lacks (BITMAP, HLL, STRUCT
// and other types, HLL_UNION and other aggregations, AUTO_INCREMENT, generated columns,
// CREATE TABLE LIKE / AS SELECT, other ALTERs) are errors naming them. Errors name the
// statement (number, line, text) and the offending token (line and column). TableSchema.DDL
// renders a table as SHOW CREATE TABLE prints it; the text creates the same table again.
//
// # Storage types
//
// Row values are stored as: int8/int16/int32/int64 (TINYINT…BIGINT), decimal.Decimal
// (LARGEINT, DECIMAL), float32/float64, bool, string (CHAR/VARCHAR/STRING), time.Time in UTC
// holding the wall clock (DATE, DATETIME; microseconds) and the compact JSON text as a string
// (JSON), and ARRAY / MAP values as their canonical text (elements converted to their types:
// ["1", 2] in ARRAY<INT> is [1,2]; a map prints as StarRocks prints it, numeric keys bare:
// {1:"a"}, string keys quoted: {"k":1}). Rows returns these types.
//
// # Load semantics (docs/notes/starrocks-protocol.md §9)
//
//   - A JSON key maps to the source field of exactly its name (without a columns header, the
//     table's columns as stored; with one, its plain names, which map to columns ignoring
//     case as DDL and SQL names do): "Coupon" is no field of a column "coupon" and is skipped
//     like any unknown key; of duplicate keys the first wins; missing keys take the DEFAULT (CURRENT_TIMESTAMP = load time, wall clock
//     of the `timezone` header or the local zone) or NULL.
//   - A value that fails conversion is NULL with strict_mode off (the row is then filtered
//     only if the column is NOT NULL) and filters the row with strict_mode on. JSON null and
//     CSV \N are NULL in both modes. NULL in a NOT NULL column filters the row.
//   - DECIMAL values are rounded half away from zero to the column's scale (like a StarRocks
//     cast); a value whose integer part needs more than precision-scale digits fails.
//     VARCHAR/CHAR lengths are bytes. DATE/DATETIME accept "2024-01-02", "20240102",
//     "2024-01-02 03:04:05[.ffffff]" and the same with 'T'; a DATE keeps the day only.
//     BOOLEAN accepts true/false (any case) and 0/1. A JSON column takes any JSON value;
//     a string column takes the text of a JSON object/array. An integer column takes an
//     integer of its range; a number with a fraction (CSV field, JSON number or string) is
//     truncated toward zero ('1.5' is 1) and fails out of range, as StarRocks's CSV and JSON
//     readers do; a JSON boolean into a numeric column fails.
//   - strip_outer_array=true: each element of a top-level array is a row; false: each
//     top-level document is one row, and several documents may follow each other in one body.
//     A top-level array with strip_outer_array=false is judged like the BE's JSON reader: one
//     filtered row "JSON data is an array, strip_outer_array must be set true" (and an object
//     with strip_outer_array=true the converse message). A body that is not valid JSON at all
//     is a Parse error, not a filtered row.
//   - `__op` (0/1, number or string) is read only for PRIMARY KEY tables; on other tables it is
//     an unknown key and the row is appended/replaced like any other. A delete row is
//     validated like an upsert (so a NOT NULL column without default must be present) and
//     counts as loaded. An __op other than 0/1 filters the row.
//   - partial_update (PRIMARY KEY only, else "Only primary key table support partial update"):
//     the columns header (or, without it, the keys present in each row) are the updated
//     columns; every key column must be present; existing rows keep the other columns; a new
//     row takes DEFAULT, NULL, or the type's zero value for NOT NULL columns without default.
//   - CSV: fields in table column order or in `columns` order (a name that is no column skips
//     its field, `__op` gives the operation on PRIMARY KEY tables); `\N` is NULL; a wrong field
//     count filters the row ("Value count does not match column count…"). The default format is
//     CSV with a tab separator. The bodies of one load stream (one (label, table) of a
//     transaction: ParseStream, then EndStream at prepare or commit) are one CSV stream, as the
//     BE's pipe is: a body need not end with the row delimiter, its open last record continues
//     in the next body, and the end of the stream ends it. skip_header (lines of the stream),
//     trim_space, enclose (a quoted field may hold separators and delimiters; a doubled quote
//     is one quote; a quoted \N is text) and escape work, across bodies too.
//   - jsonpaths map to the `columns` entries (or to the table columns in order) and json_root
//     selects the node the rows are read from; paths support $.a.b, $.a[0] and $['a'].
//   - merge_condition (PRIMARY KEY tables, a non-key column): an upsert of an existing key
//     applies only if its value in that column is >= the stored one (NULL is smallest); deletes
//     and new keys always apply.
//   - format=gzip|bzip2|deflate|lz4|zstd are CSV bodies Parse inflates first (lz4 = LZ4 frame,
//     deflate = zlib stream). The separate `compression`/Content-Encoding headers are the HTTP
//     layer's to undo before Parse.
//   - `where` is evaluated by go-mysql-server on each converted row (after the quality checks:
//     a row is filtered or unselected, never both); rows it rejects count as Unselected.
//   - `columns` mapping expressions "col = expr": a quoted constant, a number, NULL, a source
//     field listed as a plain name, or any expression over those fields (arithmetic,
//     functions), evaluated by go-mysql-server with MySQL semantics except CAST, which takes
//     StarRocks type names and semantics (a string that is not an integer of the type casts
//     to NULL: load_cast.go);
//     `__op = 'delete'` ('upsert', 0, 1) sets the operation of every row. When the header lists
//     no plain names the source fields are the table's columns in order (the documented
//     delete-load form `columns: __op='delete'`). In JSON loads the source fields are the keys
//     the header names. A header that leaves out a NOT NULL column without default, names an
//     unknown column or holds an expression that does not analyse fails PlanLoad (the FE's
//     plan of a table's first load).
//   - AGGREGATE KEY: a row merges into the stored row with its key, column by column: SUM
//     adds (NULL adds nothing), MAX/MIN keep the extreme, REPLACE takes the new value,
//     REPLACE_IF_NOT_NULL the new value unless NULL.
//
// # Durability
//
// OpenJournal makes a store durable: every DDL statement and every Apply (with the caller's
// facts, ApplyWithMeta) is appended to a journal and synced before it is visible; reopening
// replays it, dropping a torn last record (journal.go).
//
// # Visibility
//
// The catalog and all rows form one immutable snapshot behind an atomic pointer, with a
// global version. Apply builds the next snapshot from copy-on-write B+trees (cost
// proportional to the rows written) and publishes it with one atomic store after every table
// is in place, so no reader sees part of a commit. A Rows call, and every query on the MySQL
// port (pinned per connection when the query arrives, covering every table it touches, joins
// and sub-queries included), reads exactly one snapshot. Snapshots nobody reads are garbage
// collected, which keeps memory bounded.
//
// # MySQL port
//
// ServeMySQL serves SELECT, SHOW, DESCRIBE, USE and the rest of go-mysql-server's read
// statements. Statements starting with CREATE/DROP DATABASE|SCHEMA|TABLE, ALTER TABLE or
// TRUNCATE are intercepted by a handler wrapper before go-mysql-server parses them and run
// through the DDL parser above (with the session's current database). So are StarRocks's own
// statements (system.go): SHOW PROC '/transactions…', SHOW TRANSACTION, SHOW LOAD, SHOW
// [ALL] STREAM LOAD, SHOW FRONTENDS, SHOW BACKENDS, ADMIN SET / SHOW FRONTEND CONFIG
// (answered from a System, the server around the store), SHOW CREATE TABLE (StarRocks DDL)
// and SHOW ALTER TABLE COLUMN (schemachange_show.go); CREATE MATERIALIZED VIEW, SHOW PARTITIONS,
// SHOW TABLET and SHOW DATA get an error saying so (unsupported.go). current_version() and
// @@version_comment name the emulator. INSERT (an upsert on PRIMARY KEY and UNIQUE KEY
// tables, a merge on AGGREGATE KEY tables, an append on DUPLICATE KEY tables), UPDATE and
// DELETE (PRIMARY KEY tables) run as one atomic Apply per statement. Queries of every kind run
// concurrently, information_schema ones included: each lookup of an information_schema table
// gets its own copy of go-mysql-server's shared instance, whose planning writes into it.
// information_schema.tables_config reports each table's TABLE_MODEL with the FE's KeysType
// names (PRIMARY_KEYS, DUP_KEYS, UNIQUE_KEYS, AGG_KEYS); information_schema.loads (StarRocks
// 4.0's columns) and load_tracking_logs show the transaction stream loads the System knows;
// information_schema.columns, DESC and SHOW [FULL] COLUMNS print StarRocks's values
// (describe.go): COLUMN_KEY PRI/UNI/DUP/AGG on key columns, COLUMN_TYPE int(11), bigint(20),
// varchar(65533) for STRING, decimal(18, 2), datetime, json, array<int(11)>, tinyint(1) for
// BOOLEAN, bigint(20) unsigned for LARGEINT. SHOW ALTER TABLE COLUMN, CANCEL ALTER TABLE
// COLUMN and SYNC are answered too. Query results keep go-mysql-server's column types
// (LARGEINT decimal(39,0), DATETIME datetime(6), STRING text, ARRAY/MAP longtext).
// WithStatementHook lets the server inject faults per statement (mysql_fault.go).
package store
