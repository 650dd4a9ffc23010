package txnassembler

import (
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// Field names of the processor's configuration.
const (
	fieldFormat       = "format"
	fieldPartition    = "partition"
	fieldSourceOffset = "source_offset"
	fieldTableMapping = "table_mapping"
	fieldDatabase     = "database"
	fieldInstanceID   = "instance_id"
	fieldCustom       = "custom"
	fieldCustomKind   = "kind"
	fieldCustomTxnID  = "txn_id"
	fieldCustomDB     = "database"
	fieldCustomTable  = "table"
	fieldCustomRow    = "row"
	fieldCustomDelete = "delete"
	fieldCustomSchema = "schema"
)

// Formats of the source events.
const (
	formatEnvelope = "envelope"
	formatMaxwell  = "maxwell"
	formatCustom   = "custom"
)

const specDescription = `
The processor reads change events of one or more ordered source streams
(by default one Kafka partition of one topic each), recognises where each
source transaction begins and ends, and stamps every message it emits with the
metadata contract that the ` + "`starrocks_txn`" + ` output consumes. The keys
marked *typed* are carried in one typed metadata value, ` + "`starrocks_contract`" + `,
not as strings; the others are strings. The output reads a typed key set as a
string after this processor in preference to the typed value, dead letters
and the ` + "`kafka_txn`" + ` output's headers carry every key as a string, and in
Bloblang ` + "`@starrocks_contract.string().parse_json()`" + ` gives the typed keys
as an object:

| key | set on | value |
|---|---|---|
| ` + "`starrocks_partition`" + ` | every message | the source stream (see ` + "`partition`" + `) |
| ` + "`starrocks_database`, `starrocks_table`" + ` | data rows | the target table (after ` + "`table_mapping`" + ` and ` + "`database`" + `) |
| ` + "`starrocks_txn_id`" + ` | every message | the source transaction id |
| ` + "`starrocks_txn_end`" + ` (typed) | last message of a source transaction | ` + "`true`" + ` (a data row, or a body-less END marker) |
| ` + "`starrocks_txn_abort`" + ` (typed) | body-less marker | ` + "`true`" + `: discard the partition's open source transaction |
| ` + "`starrocks_marker`" + ` (typed) | body-less markers | ` + "`true`" + ` |
| ` + "`starrocks_seq`" + ` (typed) | every message | 1, 2, 3 … dense per processor instance, one per emitted message |
| ` + "`starrocks_seq_source`" + ` (typed) | every message | the instance tag: ` + "`instance_id`" + ` (if set), a dash and 12 random hex characters |
| ` + "`starrocks_source_offset`" + ` (typed) | every message | the source offset, a decimal integer strictly increasing per partition; the arrival counter (see ` + "`source_offset`" + `) is marked as such and never written as a string |
| ` + "`starrocks_partition_epoch`" + ` | every message whose input stamped it | the partition's assignment epoch, copied from the incoming message (the ` + "`kafka_txn`" + ` input sets it) |
| ` + "`starrocks_schema_change`" + ` (typed) | schema changes | ` + "`true`" + `: the body is the table definition of ` + "`starrocks_database`.`starrocks_table`" + `, applied in order before the rows after it |

A data row's body becomes the row object to load, with ` + "`\"__op\": 0`" + `
(upsert) or ` + "`\"__op\": 1`" + ` (delete; PRIMARY KEY tables only). A schema
change's body is the table definition
` + "`{\"columns\": [{\"name\", \"type\", \"nullable\", \"default\", \"comment\"}], \"primary_key\": [...]}`" + `
with StarRocks types as DDL text (maxwell ` + "`table-create`/`table-alter`" + `,
the envelope's ` + "`SCHEMA`" + ` event, the custom ` + "`schema`/`schema_end`" + ` kinds).
Markers have an empty body. All other metadata (` + "`kafka_*`" + ` etc.) is kept.
Nothing is ever dropped automatically: a maxwell ` + "`table-drop`" + ` or
` + "`database-drop`" + ` is skipped, like ` + "`database-create`/`database-alter`" + `
(the output creates a database with its first table).

### Boundary rules (per partition)

- A BEGIN opens a transaction and is dropped. A BEGIN with the id of the open
  transaction is a re-send and is dropped. A BEGIN with another id while one is
  open means the source restarted: a body-less ` + "`starrocks_txn_abort`" + ` marker
  for the open transaction takes its place and the new transaction opens.
- A data row without a BEGIN opens its transaction implicitly.
- An END closes the open transaction with a body-less marker carrying
  ` + "`starrocks_txn_end: true`" + ` and the END event's own source offset. A row
  that is itself the last of its transaction (maxwell ` + "`commit: true`" + `,
  custom ` + "`data_end`" + `) carries ` + "`starrocks_txn_end: true`" + ` itself. An END
  with nothing open is dropped.
- A row of another transaction while one is open is a contract violation
  (two writers interleaved in one partition): it is never merged silently but
  flagged with an error and stamped with the open transaction's id, so the
  output dead-letters that transaction whole; the row's own transaction is
  remembered as incomplete and its later rows are flagged too, so no part of
  either is ever committed. An END of another transaction ends nothing and is
  dropped with a warning (it is a duplicate, or belongs to an aborted or
  interleaved transaction whose rows were flagged already).
- A maxwell ` + "`table-create`" + ` or ` + "`table-alter`" + ` is a source transaction
  of its own (id ` + "`ddl@<offset>`" + `, ` + "`starrocks_txn_end: true`" + `) in its
  place in the stream. An envelope ` + "`SCHEMA`" + ` event (custom ` + "`schema`" + `) is
  part of its transaction, like a row.
- Exactly one batch comes out per batch in; dropped events (BEGINs, ENDs with
  nothing open, maxwell DDL that changes no table) simply leave it.

### Bad input

Nothing is lost and nothing is merged silently: a message that cannot be
parsed, lacks a field (table, database, transaction id), has an unknown event
type, breaks the one-transaction-at-a-time rule, or carries a source offset at
or below one its partition already passed (a replay or a reorder) is flagged
with an error naming the field, the partition and the transaction, and still
carries the contract (partition, transaction id, seq, offset) so that the
output can dead-letter its whole source transaction. A bad message that
cannot be attributed to any transaction (nothing open, no id) is its own
one-message transaction (id ` + "`invalid@<offset>`" + `, ` + "`starrocks_txn_end: true`" + `),
and the next transaction the partition opens without a BEGIN is flagged as
possibly incomplete, because the unreadable message may have been its first row.

### Ordering and replays

The processor relies on arrival order. Run it under ` + "`input.processors`" + `
(one goroutine, in order) or with ` + "`pipeline.threads: 1`" + `. It refuses
every other place itself: an output's processors, a batching policy's, inside
another processor or a processor resource fail its construction (the stream
does not start); under ` + "`pipeline.processors`" + ` with ` + "`pipeline.threads`" + ` other
than 1 (the default -1 included) its first call, and every later one, is held
unprocessed with an error naming the fix until the stream stops. Where the
place cannot be told, a call that overlaps another on the same instance fails
every message of its batch with an error saying so, without blocking.

A nacked batch is replayed by Benthos through every processor. Its offsets are
then at or below the partition's high-water mark, so its messages are flagged
as replays and change no state. The ` + "`starrocks_txn`" + ` output never nacks, so
with it replays do not happen in normal running. When the output fences a
partition (rebalance), the processor forgets the partition's open transaction
and high-water mark, so the new assignment starts clean. A message whose
` + "`starrocks_partition_epoch`" + ` belongs to the revoked assignment (older than the
partition's current epoch, or the fenced one) is dropped without changing any
state (` + "`txn_assembler_dropped{kind=\"stale_epoch\"}`" + `), so a late batch of the old
owner cannot re-seed the reset partition.
`

// Defaults of the custom mappings: a generic event shape.
var customDefaults = map[string]string{
	fieldCustomKind:   "root = this.kind",
	fieldCustomTxnID:  "root = this.txn_id",
	fieldCustomDB:     "root = this.database",
	fieldCustomTable:  "root = this.table",
	fieldCustomRow:    "root = this.row",
	fieldCustomDelete: "root = this.delete | false",
	fieldCustomSchema: "root = this.schema",
}

var customDefaultsJSON = func() string {
	b, err := json.Marshal(customDefaults)
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// errBlankDatabase is the lint message and the start-time error of a
// database of only blanks (empty is the default: keep each event's database).
const errBlankDatabase = "database must not be blank: leave it empty to keep each event's database"

// mappingTargetPattern is a table_mapping target: a table, or a database and
// a table joined by one dot, without blanks.
const mappingTargetPattern = `^[^.\s]+(\.[^.\s]+)?$`

var mappingTargetRE = regexp.MustCompile(mappingTargetPattern)

// checkMappingTarget refuses a table_mapping target the lint refuses, with
// its text.
func checkMappingTarget(source, target string) error {
	if !mappingTargetRE.MatchString(target) {
		return fmt.Errorf("table_mapping entry %q: %q: the target must be table or database.table", source, target)
	}
	return nil
}

// isSet reports whether an optional string field holds a value. The optional
// fields default to "" rather than being absent, so that a generated config
// (`create`, the reference's full config) carries no example as a value; ""
// means unset.
func isSet(conf *service.ParsedConfig, field string) bool {
	if !conf.Contains(field) {
		return false
	}
	v, err := conf.FieldAny(field)
	if err != nil {
		return false
	}
	s, ok := v.(string)
	return !ok || s != ""
}

func processorSpec() *service.ConfigSpec {
	return service.NewConfigSpec().
		Beta().
		Categories("Integration").
		Version("0.1.0").
		Summary("Recognises source-transaction boundaries of CDC events per partition and stamps the metadata contract of the `starrocks_txn` output.").
		Description(specDescription).
		Fields(
			service.NewStringAnnotatedEnumField(fieldFormat, map[string]string{
				formatEnvelope: "Events `{\"partition\": 3, \"txnId\": \"t-17\", \"type\": \"TXN_BEGIN\" | \"DATA\" | \"SCHEMA\" | \"TXN_END\", \"database\": \"test\", \"table\": \"orders\", \"json\": \"{...}\"}`, where `json` is the row as a JSON string or an object. An optional `op` (`insert`, `update`, `upsert`, `delete`, `c`, `u`, `r`, `d`, `0`, `1`) marks deletes; without it an `__op` already in the row is kept, else the row is an upsert. A `SCHEMA` event's `json` is the table definition of `database`.`table` instead, part of its transaction like a row (`TXN_BEGIN`, `SCHEMA`, `DATA`…, `TXN_END`: the change is applied before the rows).",
				formatMaxwell:  "Maxwell rows `{\"database\": \"shop\", \"table\": \"orders\", \"type\": \"insert\", \"xid\": 1234, \"commit\": true, \"data\": {...}}` (needs `output_commit_info`, the default). The transaction id is `xid`; the row with `commit: true` ends the transaction. `insert`/`update` load `data` as an upsert, `delete` loads `data` as a delete. Each `bootstrap-insert` row is its own one-row transaction (id `bootstrap@<offset>`). With `output_ddl`, a `table-create` or `table-alter` is a schema change of the table `def` names (a rename's new name), a transaction of its own (id `ddl@<offset>`), its types taken from `def` and the lengths and precision from its `sql`; a column whose type neither gives is flagged, not guessed. `database-create`, `database-alter`, `database-drop`, `table-drop` (nothing is dropped automatically), `bootstrap-start`, `bootstrap-complete` and any other message with `sql` or `def` are dropped.",
				formatCustom:   "Any shape: the Bloblang mappings under `custom` give each message's kind, transaction id, database, table, row and delete flag, or a schema change's table definition.",
			}).Description("The format of the source events.").Example(formatMaxwell).Default(formatEnvelope),
			service.NewInterpolatedStringField(fieldPartition).
				Description("The source stream a message belongs to; every stream has its own transaction state and offsets. When empty: the Kafka topic and partition (`${! @kafka_topic }/${! @kafka_partition }`, e.g. `orders/3`) when both metadata keys are present; otherwise, with `format: envelope`, the event's `partition` field as a decimal string (e.g. `3`); otherwise the message is flagged with an error asking to set this field.").
				Example(`${! @kafka_topic }/${! @kafka_partition }`).
				Example(`${! meta("source") }`).
				Default(""),
			service.NewInterpolatedStringField(fieldSourceOffset).
				Description("The source position of a message, a whole number that must strictly increase within a partition. When empty: the `kafka_offset` metadata; when that is absent (a non-Kafka source), a per-partition arrival counter (0, 1, 2 … in arrival order). The counter is no source position: a replayed message gets a new number, and it starts at 0 again at every start. It orders a partition's messages within one run; the contract marks it (`source_offset_is_arrival` in `starrocks_contract`), dead letters and Kafka headers do not carry it, and `starrocks_txn` with `semantic: exactly_once` refuses every source transaction numbered by it (dead-lettered whole, or its partition stalls), since its progress compares positions; `lint` warns about such a config. Set this field wherever the source has a position.").
				Example(`${! @kafka_offset }`).
				Example(`${! this.position }`).
				Default(""),
			service.NewStringMapField(fieldTableMapping).
				Description("Maps a source table to a target table. Keys are the source `db.table` (or a bare `table`, which matches that table in any database); values are a target `table` (database unchanged, or `database` if set) or `db.table`. Unmapped tables keep their names.").
				Example(map[string]any{"shop.orders": "orders", "shop.order_lines": "analytics.order_items"}).
				Optional(),
			service.NewStringField(fieldDatabase).
				Description("Overrides the target database of every data row (a `db.table` value of `table_mapping` still wins). Also supplies the database when events carry none. Empty: every row keeps its event's database.").
				Example("analytics").
				Default(""),
			service.NewStringField(fieldInstanceID).
				Description("A name prefixed to the random instance tag in `starrocks_seq_source`, to tell instances apart in logs and metrics. Empty: the random tag alone.").
				Example("orders-pipeline").
				Default("").
				Advanced(),
			service.NewObjectField(fieldCustom,
				service.NewBloblangField(fieldCustomKind).
					Description("Gives the event kind: `begin`, `data`, `end`, `data_end` (a data row that also ends its transaction), `schema` (a schema change: `schema` gives the table definition of `database`.`table`, applied before the rows that follow it), `schema_end` (a schema change that also ends its transaction, e.g. a DDL that is a transaction of its own), `abort` (discard the open transaction) or `skip` (drop the message).").
					Example(`root = match this.op { "BEGIN" => "begin", "COMMIT" => "end", "ROLLBACK" => "abort", _ => "data" }`).
					Default(customDefaults[fieldCustomKind]),
				service.NewBloblangField(fieldCustomTxnID).
					Description("Gives the source transaction id (a string or a number).").
					Example(`root = this.xid`).
					Default(customDefaults[fieldCustomTxnID]),
				service.NewBloblangField(fieldCustomDB).
					Description("Gives the source database of a data row (may be empty when `database` is set).").
					Example(`root = this.source.db`).
					Default(customDefaults[fieldCustomDB]),
				service.NewBloblangField(fieldCustomTable).
					Description("Gives the source table of a data row.").
					Example(`root = this.source.table`).
					Default(customDefaults[fieldCustomTable]),
				service.NewBloblangField(fieldCustomRow).
					Description("Gives the row object of a data row (an object, or a JSON string of one).").
					Example(`root = if this.op == "d" { this.before } else { this.after }`).
					Default(customDefaults[fieldCustomRow]),
				service.NewBloblangField(fieldCustomDelete).
					Description("Gives whether a data row is a delete (a boolean).").
					Example(`root = this.op == "d"`).
					Default(customDefaults[fieldCustomDelete]),
				service.NewBloblangField(fieldCustomSchema).
					Description("Gives the table definition of a `schema` or `schema_end` event (an object, or a JSON string of one): `{\"columns\": [{\"name\", \"type\", \"nullable\", \"default\", \"comment\"}], \"primary_key\": [...]}` with StarRocks types as DDL text (`BIGINT`, `VARCHAR(64)`, `DECIMAL(12,2)`); `nullable` is false when absent. Read only for those kinds.").
					Example(`root = {"columns": this.columns.map_each(c -> {"name": c.name, "type": c.sr_type, "nullable": c.nullable}), "primary_key": this.pk}`).
					Default(customDefaults[fieldCustomSchema]),
			).Description("The mappings of `format: custom`. Each runs against the original message; `this` is its JSON body and `@` its metadata.").
				Example(map[string]any{"kind": `root = this.event`, "txn_id": `root = this.tx`, "table": `root = this.tbl`, "row": `root = this.data`}).
				Advanced(),
		).
		// A spec keeps only its last LintRule, so the checks are one rule.
		LintRule(`
let errs = []
let defaults = `+customDefaultsJSON+`
let custom_set = this.custom.or({}).key_values().any(kv -> kv.value != $defaults.get(kv.key))
let errs = if this.format.or("envelope") != "custom" && $custom_set { $errs.append("custom is only read when format is custom") } else { $errs }
let errs = $errs.merge(this.table_mapping.or({}).key_values().sort_by(kv -> kv.key).map_each(kv -> if kv.key.trim() == "" || kv.value.string().trim() == "" {
  "table_mapping entry %q: %q: source and target must not be empty".format(kv.key, kv.value.string())
} else if !kv.value.string().re_match("""`+mappingTargetPattern+`""") {
  "table_mapping entry %q: %q: the target must be table or database.table".format(kv.key, kv.value.string())
} else { null }).filter(v -> v != null))
let errs = if this.database.or("") != "" && this.database.trim() == "" { $errs.append("`+errBlankDatabase+`") } else { $errs }
root = if $errs.length() > 0 { $errs }
`).
		Example("Envelope events from Kafka",
			"Each Kafka partition carries TXN_BEGIN/DATA/TXN_END envelopes. The input ends its batches at a TXN_END so a batch rarely holds half a transaction; the processor runs under `input.processors` so that it sees every partition in order.",
			`
input:
  kafka_txn:
    seed_brokers: [ localhost:9092 ]
    topics: [ cdc ]
    consumer_group: starrocks
    batching:
      count: 500
      period: 50ms
      check: 'this.type == "TXN_END"'
  processors:
    - txn_assembler:
        format: envelope
        table_mapping:
          shop.order_lines: order_items

output:
  starrocks_txn:
    load_urls: [ http://localhost:8030 ]
    username: root
`).
		Example("Maxwell",
			"Maxwell marks the last row of a transaction with `commit: true`; that row ends the batch and the transaction.",
			`
input:
  kafka_txn:
    seed_brokers: [ localhost:9092 ]
    topics: [ maxwell ]
    consumer_group: starrocks
    batching:
      count: 500
      period: 50ms
      check: 'this.commit == true'
  processors:
    - txn_assembler:
        format: maxwell
        database: analytics

output:
  starrocks_txn:
    load_urls: [ http://localhost:8030 ]
    username: root
`).
		Example("Custom events",
			"Events `{\"tx\": \"42\", \"op\": \"BEGIN\" | \"INSERT\" | \"DELETE\" | \"COMMIT\", \"tbl\": \"orders\", \"row\": {...}}` from a non-Kafka source; the partition comes from metadata and the offset from the event.",
			`
input:
  broker:
    inputs: [ { resource: cdc_source } ]
    batching:
      count: 500
      period: 50ms
      check: 'this.op == "COMMIT"'
  processors:
    - txn_assembler:
        format: custom
        partition: '${! @source_stream }'
        source_offset: '${! this.lsn }'
        database: shop
        custom:
          kind: |
            root = match this.op {
              "BEGIN" => "begin"
              "COMMIT" => "end"
              ["INSERT", "UPDATE", "DELETE"].contains(this) => "data"
              _ => "skip"
            }
          txn_id: 'root = this.tx'
          database: 'root = ""'
          table: 'root = this.tbl'
          row: 'root = this.row'
          delete: 'root = this.op == "DELETE"'

output:
  starrocks_txn:
    load_urls: [ http://localhost:8030 ]
    username: root
`)
}
