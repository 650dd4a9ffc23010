package starrocks_txn

// The output's configuration, by concern: spec.go declares the fields (their
// names, defaults, descriptions, examples and lint rule: the ConfigSpec the
// docs are generated from), config.go parses a ParsedConfig into the config
// the output runs on and validates it.

import (
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/starrocks-txn/benthos-starrocks/output/starrocks_txn/schemasync"

	"github.com/starrocks-txn/benthos-starrocks/internal/specfields"
)

const (
	fieldLoadURLs           = "load_urls"
	fieldUsername           = "username"
	fieldPassword           = "password"
	fieldDatabase           = "database"
	fieldTable              = "table"
	fieldCommitInterval     = "commit_interval"
	fieldBufferSize         = "buffer_size"
	fieldTxnTimeout         = "txn_timeout"
	fieldLabelPrefix        = "label_prefix"
	fieldLoadProperties     = "load_properties"
	fieldTableProperties    = "table_properties"
	fieldTPDatabase         = "database"
	fieldTPTable            = "table"
	fieldTPProperties       = "properties"
	fieldDeadLetter         = "dead_letter"
	fieldRetryBackoff       = "retry_backoff"
	fieldRBInitial          = "initial_interval"
	fieldRBMax              = "max_interval"
	fieldSequenceGapTimeout = "sequence_gap_timeout"
	fieldCompression        = "compression"
	fieldTLS                = "tls"
	fieldRequestTimeout     = "request_timeout"
	fieldCommitWait         = "label_state_wait"
	fieldUnknownCommit      = "unknown_commit_timeout"
	fieldMaxDatabases       = "max_databases"
	fieldMySQLTimeout       = "mysql_timeout"
	fieldSchemaEvolution    = "schema_evolution"
	fieldCreateTableProps   = "create_table_properties"
	fieldStallRetry         = "stall_retry_interval"
	fieldBatching           = "batching"
	fieldMySQLAddress       = "mysql_address"
	fieldProgressTable      = "progress_table"
	fieldSemantic           = "semantic"
	fieldPipelineID         = "pipeline_id"

	semanticAtLeastOnce  = "at_least_once"
	semanticExactlyOnce  = "exactly_once"
	defaultProgressTable = "starrocks_txn_progress"

	defaultBufferSize   = 128 << 20
	defaultMaxInFlight  = 1024
	defaultMaxDatabases = 256
	// recycleFraction of the server-side transaction timeout is the age at
	// which a shared transaction is committed (or rolled back when empty) and
	// reopened, so that it never expires while it is being loaded.
	recycleFraction = 0.8
	// maxCommitIntervalFraction bounds commit_interval against txn_timeout:
	// a cycle must fit well inside the recycle age.
	maxCommitIntervalFraction = 0.5
)

// Default stream-load headers for JSON rows: a chunk is sent as one JSON
// array, and the cumulative 100 MB JSON check of a transaction is skipped
// because one shared transaction carries many chunks.
var defaultLoadProperties = map[string]string{
	"format":            "json",
	"strip_outer_array": "true",
	"ignore_json_size":  "true",
}

// outputSpec is the config spec of starrocks_txn.
func outputSpec() *service.ConfigSpec {
	return service.NewConfigSpec().
		Beta().
		Categories("Services").
		Version("0.1.0").
		Summary("Loads source transactions into StarRocks tables atomically, many source transactions per StarRocks multi-table transaction, and acknowledges messages only after StarRocks committed them.").
		Description(`
Every message is a row (a JSON object) of one source transaction, stamped with the
metadata contract of the `+"`txn_assembler`"+` processor (`+"`starrocks_partition`, `starrocks_txn_id`, `starrocks_txn_end`, `starrocks_seq`, `starrocks_seq_source`, `starrocks_source_offset`, and the optional `starrocks_partition_epoch`"+`).
The output groups rows per source partition into regions (one per target table), freezes
every region of a partition at once at a source-transaction boundary, streams the frozen
chunks under one shared multi-table transaction per database (`+"`transaction_type: multi`"+`,
label `+"`<label_prefix>-<database>-<writer><n>`"+`), and commits it every `+"`commit_interval`"+`.
A source transaction is never split across two StarRocks transactions.

`+"`WriteBatch`"+` returns only once every message it carried is committed, abandoned by the
source (`+"`starrocks_txn_abort`"+`) or dead-lettered: the output never nacks. Transient
failures are retried from retained rows under a new label, forever. A poisoned source
transaction (a processing error, a delete to a non-PRIMARY-KEY table, two databases in one
transaction, a table or database that does not exist, rows StarRocks filters) goes whole to
`+"`dead_letter`"+`, or stalls its partition with an error when no dead letter output is set.

Messages without the contract (no `+"`starrocks_partition`"+` or no `+"`starrocks_seq`"+`) are admitted in
arrival order, each its own transaction.

A message whose `+"`starrocks_partition_epoch`"+` (stamped by the `+"`kafka_txn`"+` input) belongs to a
partition assignment that was revoked is acknowledged without being applied, so a batch that
reaches the output after its partition was fenced never commits the tail of a source
transaction whose head the fence dropped.

Never wrap this output in `+"`reject_errored`"+`: it drops errored messages before the output sees
them, which silently commits the rest of their source transaction.

Because `+"`WriteBatch`"+` blocks until the commit, throughput is bounded by
`+"`max_in_flight × batch size / commit_interval`"+`: size `+"`max_in_flight`"+` to at least
(batches per commit cycle + batches one open source transaction spans) × partitions.`).
		Fields(
			service.NewStringListField(fieldLoadURLs).
				Description("StarRocks FE HTTP addresses (`http://fe:8030`). A request goes to the next address only when it certainly did not reach the previous one (connection refused, name resolution, TLS handshake); a reset, a timeout or a 5xx may mean the FE applied it, so it is never re-sent elsewhere under the same label: the cycle is replayed under a new label, starting at the next address.").
				Example([]string{"http://127.0.0.1:8030"}),
			service.NewStringField(fieldUsername).
				Description("The StarRocks user.").
				Example("loader").
				Default("root"),
			service.NewStringField(fieldPassword).
				Description("The StarRocks password.").
				Secret().
				Example("${STARROCKS_PASSWORD}").
				Default(""),
			service.NewInterpolatedStringField(fieldDatabase).
				Description("The target database of a data row.").
				Example("analytics").
				Example(`${! @starrocks_database.replace_all("shop_", "") }`).
				Default(defaultDatabase),
			service.NewInterpolatedStringField(fieldTable).
				Description("The target table of a data row.").
				Example(`${! "cdc_" + @starrocks_table }`).
				Default(defaultTable),
			service.NewDurationField(fieldCommitInterval).
				Description("How often the shared transaction of a database is committed. Freshness is about this plus the commit time. At most half of `txn_timeout`.").
				Example("500ms").
				Example("5s").
				Default(defaultCommitInterval),
			service.NewIntField(fieldBufferSize).
				Description("Bytes of uncommitted rows held in memory (the row bodies only: each message in flight also holds its metadata and the input's record, about 3.5 KB in all in the bench, so size the process's memory by the records in flight, not by this). Reaching it commits the cycle early; at twice this size admission blocks (unless nothing buffered is committable, in which case an error names this field).").
				Example(268435456).
				Default(defaultBufferSize),
			service.NewDurationField(fieldTxnTimeout).
				Description("The server-side timeout of a shared transaction, sent as the `timeout` header at begin. A transaction is recycled at 80% of it. A commit cycle whose transaction fails once older than that (StarRocks too slow to load it in time) is replayed in parts of whole source transactions, halved at each such failure and doubled after each committed part, in order.").
				Example("300s").
				Default(defaultTxnTimeout),
			service.NewStringField(fieldLabelPrefix).
				Description("Prefix of the shared transaction labels `<prefix>-<database>-<writer><n>` (`<writer>`: 8 random hex digits per run of the output; `<n>`: 1, 2, 3, … per database, as 8 hex digits). Letters, digits, `_` and `-` only.").
				Example("orders_cdc").
				Default(defaultLabelPrefix),
			service.NewStringMapField(fieldLoadProperties).
				Description("Stream-load headers sent with every load, over the defaults `format: json`, `strip_outer_array: true`, `ignore_json_size: true`. `enable_merge_commit` and `where` are rejected: the first is incompatible with multi-table transactions, the second would drop rows of a source transaction and break its atomicity.").
				Example(map[string]string{"max_filter_ratio": "0", "strict_mode": "true"}).
				Default(map[string]any{}),
			service.NewObjectListField(fieldTableProperties,
				service.NewStringField(fieldTPDatabase).Description("The database of the table.").Example("test"),
				service.NewStringField(fieldTPTable).Description("The table.").Example("orders"),
				service.NewStringMapField(fieldTPProperties).Description("Stream-load headers for this table, over `load_properties`.").
					Example(map[string]any{"partial_update": "true", "columns": "order_id,order_status"}),
			).
				Description("Per-table stream-load headers overriding `load_properties`.").
				Example([]any{map[string]any{"database": "test", "table": "orders", "properties": map[string]any{"max_filter_ratio": "0.1"}}}).
				Advanced().
				Default([]any{}),
			service.NewOutputMaxInFlightField().
				Description("The number of concurrent `WriteBatch` calls. Each one is held until its rows are committed, so this must cover (batches per commit cycle + batches one open source transaction spans) × partitions; the default fits 1024 such batches.").
				Example(4096).
				Default(defaultMaxInFlight),
			service.NewIntField(fieldMaxDatabases).
				Description("The most databases written at once: each has a worker (its own shared transaction and commit cycle). A source transaction to one database more is poisoned (to `dead_letter`, or its partition stalls) with an error naming this field. A worker retires once its database has been idle for 80% of `txn_timeout`, and at once when StarRocks said its database does not exist, so the limit bounds what the database names in the data can make the output hold.").
				Example(16).
				Default(defaultMaxDatabases).
				Advanced(),
			service.NewOutputField(fieldDeadLetter).
				Description("An output that receives every poisoned source transaction whole, in order within its partition, after which it is acknowledged. Each partition's dead letters are written on their own: a write this output refuses (a record over a Kafka output's `max_message_bytes`, say) is logged once with the transaction id and what to do, retried with backoff and holds back only that partition's later dead letters (with `exactly_once`, also its later commits); it stays unacknowledged until written. A batching policy anywhere under it is refused: it would hold a transaction back until the policy fills and could split it. Without it the transaction's partition stalls with an error and the `starrocks_txn_stalled_partition` metric names it.").
				Example(map[string]any{"file": map[string]any{"path": "./poisoned.jsonl", "codec": "lines"}}).
				Optional(),
			// Not service.NewBackOffField: it adds max_elapsed_time, and a
			// replay never gives up (that would lose or stall a source
			// transaction). The two fields keep its names and meaning.
			service.NewObjectField(fieldRetryBackoff,
				service.NewDurationField(fieldRBInitial).Description("The first wait before a failed cycle is replayed.").Example("1s").Default(defaultRetryInitial),
				service.NewDurationField(fieldRBMax).Description("The longest wait between replays.").Example("2m").Default(defaultRetryMax),
			).
				Description("Capped exponential backoff between replays of a failed commit cycle. Replays go on forever.").
				Example(map[string]any{"initial_interval": "1s", "max_interval": "2m"}).
				Advanced(),
			maxRetriesField(),
			maxRetryDurationField(),
			service.NewDurationField(fieldSequenceGapTimeout).
				Description("How long admission waits for a missing `starrocks_seq` (a message dropped between the assembler and this output) before it reports the gap and skips it. Seqs carried by a `WriteBatch` call that waits for buffer space are not a gap: the timer starts again while such a call waits. A skipped message that arrives after all (slow, not dropped) joins its source transaction at its place while that is still open; otherwise it is poisoned alone, its reason naming this field: set it above the longest time a message can take from the assembler to this output.").
				Example("30s").
				Default(defaultSequenceGapTimeout).
				Advanced(),
			service.NewStringEnumField(fieldCompression, "none", "gzip", "lz4_frame").
				Description("Compression of load bodies.").
				Example("lz4_frame").
				Default("none").
				Advanced(),
			specfields.TLS(fieldTLS),
			allowInsecureRedirectField(),
			service.NewDurationField(fieldRequestTimeout).
				Description("The timeout of one HTTP request to StarRocks. A request that ran out of it is replayed (under a new label for a load) with twice the timeout for that kind of request, up to 8 × this value, and the timeout halves back once requests of that kind end within half of it: a StarRocks that answers every load slower than this is still loaded, after a few replays, instead of never.").
				Example("30s").
				Default(defaultRequestTimeout).
				Advanced(),
			service.NewDurationField(fieldCommitWait).
				Description("How long one label-state poll waits for an ambiguous commit to become final before it is polled again.").
				Example("30s").
				Default(defaultLabelStateWait).
				Advanced(),
			service.NewDurationField(fieldUnknownCommit).
				Description("How long a commit whose outcome StarRocks cannot tell any more is waited for before it is taken as not committed and its cycle replayed. StarRocks forgets the state of finished labels by count (`label_keep_max_num`), so a commit whose reply was lost can find its label UNKNOWN for good. The output first settles it from the writer or progress rows the label carried (`exactly_once`, or `pipeline_id` with `mysql_address`); without them, or when they cannot tell, it waits this long, then replays (at-least-once: a DUPLICATE KEY table may get the cycle's rows twice), logs a warning naming the label and counts it in `starrocks_txn_unknown_commits`. The same bound applies to a commit whose label stays PREPARE while re-sent commits are refused: it is then rolled back, which proves it was not committed, and replayed.").
				Example("2m").
				Default(defaultUnknownCommit).
				Advanced(),
			service.NewStringAnnotatedEnumField(fieldSemantic, map[string]string{
				semanticAtLeastOnce: "Nothing is lost; after a crash, a restart or a rebalance, source transactions StarRocks committed but Kafka had not yet recorded are loaded again (PRIMARY KEY tables absorb them, DUPLICATE KEY tables get them twice).",
				semanticExactlyOnce: "Every commit also writes, in the same StarRocks transaction, one row per source partition into `progress_table`; on start and whenever a partition is (re)assigned or fenced the output reads it back and acknowledges, without loading, every source transaction StarRocks already holds. Needs `mysql_address` and `pipeline_id`, and `starrocks_source_offset` on every message (the `txn_assembler` and `debezium_txn` stamp it): a source transaction with a message without it is refused whole, to `dead_letter` or a stall, and so is one the `txn_assembler` numbered by its arrival counter (a source without offsets: set its `source_offset`).",
			}).
				Description("The delivery guarantee. See the README for exactly what `exactly_once` covers and its limits.").
				Example(semanticExactlyOnce).
				Default(semanticAtLeastOnce),
			transactionModeField(),
			preparedTimeoutField(),
			service.NewStringField(fieldPipelineID).
				Description("Names this pipeline's rows in `progress_table`. Required with `exactly_once`; every member of one consumer group must use the same value, and two pipelines that write the same databases must use different ones. Changing it starts the pipeline over with no progress. With `at_least_once`, setting it together with `mysql_address` keeps the writer rows (no progress rows) in `<progress_table>_writers`, so that a successor waits for a transaction the FE was still committing when a process died instead of letting it land over newer rows.").
				Example("orders-cdc").
				Default(""),
			service.NewStringField(fieldProgressTable).
				Description("The PRIMARY KEY progress table of `exactly_once` (the partitions' progress), and `<progress_table>_writers` beside it (the writer rows: `exactly_once`, or `at_least_once` with `pipeline_id` and `mysql_address` set), created when missing in every database the pipeline writes, before the first commit there.").
				Example("orders_cdc_progress").
				Default(defaultProgressTable).
				Advanced(),
			service.NewStringField(fieldMySQLAddress).
				Description("The FE MySQL-protocol address (`fe:9030`), used with `username` and `password` (the same account as the HTTP loads). Required by `schema_evolution` (but `ignore`), which reads the tables' columns and applies schema changes through it, and by `exactly_once`, which creates and reads the progress table through it. When set, the output also reads a table's key model from the server the first time a source transaction deletes from it (`\"__op\": 1`), and poisons a transaction that deletes from a table without a primary key: StarRocks would silently load such a delete as an appended row.").
				Example("127.0.0.1:9030").
				Default(""),
			mysqlTLSField(),
			mysqlAllowCleartextField(),
			service.NewStringAnnotatedEnumField(fieldSchemaEvolution, map[string]string{
				schemasync.ModeEvolve: "Apply what a row needs before it is loaded: create a missing table (from a source that gives its schema and primary key: Debezium with schemas, Maxwell's DDL events, explicit schema events), add missing columns in one `ALTER TABLE … ADD COLUMN`, widen a column losslessly (a larger integer, FLOAT to DOUBLE, a longer VARCHAR, a DECIMAL with more digits) — and wait until StarRocks reports the change FINISHED, in the transaction order. What it cannot apply (a narrowing, another type family, a key change, a column whose type the source does not give) poisons the source transaction with the table, the column and what to do. Never drops a column or changes a key.",
				schemasync.ModeError:  "A row that names a table or a column StarRocks lacks poisons its source transaction (dead_letter, or the partition stalls and is tried again every `stall_retry_interval`), naming `database.table` and the columns.",
				schemasync.ModeIgnore: "Load the rows as they are: StarRocks drops the fields the table has no column for. Each dropped field is counted (`starrocks_txn_ignored_fields`) and warned about once per table and column (with `mysql_address`; without it nothing can be counted).",
			}).
				Description("What happens when rows carry a table or columns StarRocks does not have (ARCHITECTURE.md §14). `evolve` and `error` read the tables' columns over `mysql_address`, which they need. The default, `evolve`, never drops a value silently: a source that gives types gets its changes applied, one that does not is refused with the column named.").
				Example(schemasync.ModeError).
				Default(schemasync.ModeEvolve),
			service.NewStringMapField(fieldCreateTableProps).
				Description("The `PROPERTIES` of the tables `schema_evolution: evolve` creates, e.g. `replication_num`.").
				Example(map[string]any{"replication_num": "1"}).
				Default(map[string]any{}).
				Advanced(),
			service.NewDurationField(fieldStallRetry).
				Description("How often a source transaction stalled on its table or its schema (a missing table, `schema_evolution: error`, a schema change StarRocks refused or cancelled; without `dead_letter`) is tried again: it goes on, without a restart, once the cause is fixed in StarRocks.").
				Example("10s").
				Default(defaultStallRetry).
				Advanced(),
			service.NewDurationField(fieldMySQLTimeout).
				Description("The timeout of one call on the MySQL port (`mysql_address`): a table-model lookup, the creation and check of the progress and writers tables, a read of their rows. A call that times out is retried (a partition's messages wait for its progress read; the cycle whose tables were being created is replayed).").
				Example("3s").
				Default(defaultMySQLTimeout).
				Advanced(),
			specfields.Batching(fieldBatching).
				Description("Output-level batching. Off by default and best left off: it couples the acks of partitions. Batch at the input instead.").
				Advanced(),
		).
		LintRule(lintRule)
}
