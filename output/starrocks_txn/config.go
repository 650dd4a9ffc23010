// Package starrocks_txn is the starrocks_txn output: it loads source
// transactions, as stamped by the txn_assembler processor (or a hand-written
// mapping), into StarRocks multi-table transactions under one shared label per
// database and commit cycle, and acknowledges a message only once StarRocks
// has committed it (ARCHITECTURE.md §4).
package starrocks_txn

import (
	"crypto/tls"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"gopkg.in/yaml.v3"

	"github.com/starrocks-txn/benthos-starrocks/internal/specfields"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
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
				Description("StarRocks FE HTTP addresses (`http://fe:8030`). The client fails over between them in order.").
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
				Default("${! @starrocks_database }"),
			service.NewInterpolatedStringField(fieldTable).
				Description("The target table of a data row.").
				Example(`${! "cdc_" + @starrocks_table }`).
				Default("${! @starrocks_table }"),
			service.NewDurationField(fieldCommitInterval).
				Description("How often the shared transaction of a database is committed. Freshness is about this plus the commit time. Must be well below 80% of `txn_timeout`.").
				Example("500ms").
				Example("5s").
				Default(defaultCommitInterval),
			service.NewIntField(fieldBufferSize).
				Description("Bytes of uncommitted rows held in memory. Reaching it commits the cycle early; at twice this size admission blocks (unless nothing buffered is committable, in which case an error names this field).").
				Example(268435456).
				Default(defaultBufferSize),
			service.NewDurationField(fieldTxnTimeout).
				Description("The server-side timeout of a shared transaction, sent as the `timeout` header at begin. A transaction is recycled at 80% of it.").
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
				Description("An output that receives every poisoned source transaction whole, in order, after which it is acknowledged. Without it the transaction's partition stalls with an error and the `starrocks_txn_stalled_partition` metric names it.").
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
				Description("How long admission waits for a missing `starrocks_seq` (a message dropped between the assembler and this output) before it reports the gap and skips it. Seqs carried by a `WriteBatch` call that waits for buffer space are not a gap: the timer starts again while such a call waits.").
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
				Description("The timeout of one HTTP request to StarRocks.").
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
				semanticExactlyOnce: "Every commit also writes, in the same StarRocks transaction, one row per source partition into `progress_table`; on start and whenever a partition is (re)assigned or fenced the output reads it back and acknowledges, without loading, every source transaction StarRocks already holds. Needs `mysql_address` and `pipeline_id`.",
			}).
				Description("The delivery guarantee. See the README for exactly what `exactly_once` covers and its limits.").
				Example(semanticExactlyOnce).
				Default(semanticAtLeastOnce),
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
				Description("The FE MySQL-protocol address (`fe:9030`), used with `username` and `password` (the same account as the HTTP loads). Required by `exactly_once`, which creates and reads the progress table through it. When set, the output also reads a table's key model from the server the first time a source transaction deletes from it (`\"__op\": 1`), and poisons a transaction that deletes from a table without a primary key: StarRocks would silently load such a delete as an appended row.").
				Example("127.0.0.1:9030").
				Default(""),
			mysqlTLSField(),
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

// deadLetterSet reports whether dead_letter names an output. A generated
// config (`create`, the reference's full config) writes the optional output
// as `dead_letter: null`, which means the same as leaving it out.
func deadLetterSet(conf *service.ParsedConfig) bool {
	if !conf.Contains(fieldDeadLetter) {
		return false
	}
	v, err := conf.FieldAny(fieldDeadLetter)
	if err != nil || v == nil {
		return false
	}
	// A field parsed from YAML holds the node itself.
	switch n := v.(type) {
	case *yaml.Node:
		return n.ShortTag() != "!!null"
	case yaml.Node:
		return n.ShortTag() != "!!null"
	}
	return true
}

type tableProps struct {
	database, table string
	props           map[string]string
}

type config struct {
	loadURLs           []string
	username           string
	password           string
	database           *service.InterpolatedString
	table              *service.InterpolatedString
	commitInterval     time.Duration
	bufferSize         int64
	txnTimeout         time.Duration
	labelPrefix        string
	loadProperties     map[string]string
	tableProperties    []tableProps
	maxInFlight        int
	maxDatabases       int
	retryInitial       time.Duration
	retryMax           time.Duration
	sequenceGapTimeout time.Duration
	compression        string
	tls                *tls.Config
	requestTimeout     time.Duration
	labelStateWait     time.Duration
	unknownCommit      time.Duration
	mysqlTimeout       time.Duration
	batching           service.BatchPolicy
	mysqlAddress       string
	progressTable      string
	exactlyOnce        bool
	pipelineID         string
	conn               connConfig
}

// reservedLoadHeaders are set by the output and its client on every load.
var reservedLoadHeaders = map[string]bool{
	"label": true, "db": true, "table": true, "transaction_type": true, "timeout": true,
	"authorization": true, "expect": true, "content-length": true, "content-type": true,
	"host": true, "transfer-encoding": true, "connection": true,
}

// miniInterval is the minimum time between two switches of a partition:
// min(1 s, max(100 ms, commit_interval/10)).
func (c *config) miniInterval() time.Duration {
	d := c.commitInterval / 10
	if d < 100*time.Millisecond {
		d = 100 * time.Millisecond
	}
	if d > time.Second {
		d = time.Second
	}
	return d
}

func configFromParsed(conf *service.ParsedConfig) (c config, err error) {
	if c.loadURLs, err = conf.FieldStringList(fieldLoadURLs); err != nil {
		return
	}
	if c.username, err = conf.FieldString(fieldUsername); err != nil {
		return
	}
	if c.password, err = conf.FieldString(fieldPassword); err != nil {
		return
	}
	if c.database, err = conf.FieldInterpolatedString(fieldDatabase); err != nil {
		return
	}
	if c.table, err = conf.FieldInterpolatedString(fieldTable); err != nil {
		return
	}
	if c.commitInterval, err = durationField(conf, fieldCommitInterval); err != nil {
		return
	}
	var bs int
	if bs, err = conf.FieldInt(fieldBufferSize); err != nil {
		return
	}
	c.bufferSize = int64(bs)
	if c.txnTimeout, err = durationField(conf, fieldTxnTimeout); err != nil {
		return
	}
	if c.labelPrefix, err = conf.FieldString(fieldLabelPrefix); err != nil {
		return
	}
	if c.loadProperties, err = conf.FieldStringMap(fieldLoadProperties); err != nil {
		return
	}
	var tps []*service.ParsedConfig
	if tps, err = conf.FieldObjectList(fieldTableProperties); err != nil {
		return
	}
	for _, tp := range tps {
		var p tableProps
		if p.database, err = tp.FieldString(fieldTPDatabase); err != nil {
			return
		}
		if p.table, err = tp.FieldString(fieldTPTable); err != nil {
			return
		}
		if p.props, err = tp.FieldStringMap(fieldTPProperties); err != nil {
			return
		}
		c.tableProperties = append(c.tableProperties, p)
	}
	if c.maxInFlight, err = conf.FieldMaxInFlight(); err != nil {
		return
	}
	if c.maxDatabases, err = conf.FieldInt(fieldMaxDatabases); err != nil {
		return
	}
	if c.retryInitial, err = durationField(conf, fieldRetryBackoff, fieldRBInitial); err != nil {
		return
	}
	if c.retryMax, err = durationField(conf, fieldRetryBackoff, fieldRBMax); err != nil {
		return
	}
	if c.sequenceGapTimeout, err = durationField(conf, fieldSequenceGapTimeout); err != nil {
		return
	}
	if c.compression, err = conf.FieldString(fieldCompression); err != nil {
		return
	}
	if c.compression == "none" {
		c.compression = ""
	}
	var tlsOn bool
	if c.tls, tlsOn, err = conf.FieldTLSToggled(fieldTLS); err != nil {
		return
	}
	if !tlsOn {
		c.tls = nil
	}
	if c.requestTimeout, err = durationField(conf, fieldRequestTimeout); err != nil {
		return
	}
	if c.labelStateWait, err = durationField(conf, fieldCommitWait); err != nil {
		return
	}
	if c.unknownCommit, err = durationField(conf, fieldUnknownCommit); err != nil {
		return
	}
	if c.mysqlTimeout, err = durationField(conf, fieldMySQLTimeout); err != nil {
		return
	}
	if c.batching, err = conf.FieldBatchPolicy(fieldBatching); err != nil {
		return
	}
	if c.mysqlAddress, err = conf.FieldString(fieldMySQLAddress); err != nil {
		return
	}
	if c.progressTable, err = conf.FieldString(fieldProgressTable); err != nil {
		return
	}
	var sem string
	if sem, err = conf.FieldString(fieldSemantic); err != nil {
		return
	}
	c.exactlyOnce = sem == semanticExactlyOnce
	if c.pipelineID, err = conf.FieldString(fieldPipelineID); err != nil {
		return
	}
	if c.conn, err = connConfigFromParsed(conf); err != nil {
		return
	}
	err = c.validate()
	return
}

// validate repeats the lint rules, because a config built in code is not
// linted, and checks what lint rules cannot.
func (c *config) validate() error {
	if len(c.loadURLs) == 0 {
		return errors.New("load_urls must list at least one StarRocks FE address, e.g. http://127.0.0.1:8030")
	}
	check := func(where string, props map[string]string) error {
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			lk := strings.ToLower(k)
			if reservedLoadHeaders[lk] {
				return fmt.Errorf("%s: header %s is set by the output itself and cannot be a load property", where, k)
			}
			if c.compression != "" && (lk == "compression" || lk == "content-encoding") {
				return fmt.Errorf("%s: header %s conflicts with compression %s: set only one", where, k, c.compression)
			}
			if lk == "format" && !strings.EqualFold(props[k], "json") {
				return fmt.Errorf("%s: format %s is not supported: the output loads JSON rows", where, props[k])
			}
			switch lk {
			case "enable_merge_commit":
				return fmt.Errorf("%s: enable_merge_commit is incompatible with multi-table transactions: remove it", where)
			case "where":
				return fmt.Errorf("%s: a where header drops rows of a source transaction and breaks its atomicity: filter with a processor instead", where)
			}
		}
		return nil
	}
	if err := check(fieldLoadProperties, c.loadProperties); err != nil {
		return err
	}
	for _, tp := range c.tableProperties {
		if tp.database == "" || tp.table == "" {
			return errors.New(msgTableProperties)
		}
		if err := check(fmt.Sprintf("table_properties %s.%s", tp.database, tp.table), tp.props); err != nil {
			return err
		}
	}
	if c.commitInterval <= 0 {
		return errors.New(msgCommitIntervalPositive)
	}
	if c.txnTimeout < time.Second {
		return errors.New(msgTxnTimeoutMin)
	}
	if float64(c.commitInterval) > maxCommitIntervalFraction*float64(c.txnTimeout) {
		return errors.New(msgCommitVsTimeout)
	}
	if c.bufferSize < 1 {
		return errors.New(msgBufferSize)
	}
	if c.maxInFlight < 1 {
		return errors.New(msgMaxInFlight)
	}
	if c.maxDatabases < 1 {
		return errors.New(msgMaxDatabases)
	}
	if c.retryInitial <= 0 || c.retryMax < c.retryInitial {
		return errors.New(msgRetryBackoff)
	}
	if c.sequenceGapTimeout <= 0 {
		return errors.New(msgSequenceGap)
	}
	if c.unknownCommit <= 0 {
		return errors.New(msgUnknownCommit)
	}
	if c.mysqlTimeout <= 0 {
		return errors.New(msgMySQLTimeout)
	}
	if c.trackWriters() && len(c.pipelineID) > maxPipelineID {
		return fmt.Errorf("pipeline_id %q is longer than %d characters", c.pipelineID, maxPipelineID)
	}
	if c.exactlyOnce {
		if c.pipelineID == "" {
			return errors.New("semantic exactly_once needs pipeline_id: it names this pipeline's rows in the progress table")
		}
		if c.mysqlAddress == "" {
			return errors.New("semantic exactly_once needs mysql_address: the progress table is created and read over the FE MySQL protocol")
		}
	}
	// Checked in every mode, used or not: the name goes into SQL (DDL and
	// queries) whenever writer rows or progress are kept.
	if !progressTableRE.MatchString(c.progressTable) {
		return errors.New(msgProgressTable(c.progressTable))
	}
	if err := starrocks.ValidateName("table", writersTable(c.progressTable)); err != nil {
		return fmt.Errorf("progress_table: %w", err)
	}
	if !validPrefix(c.labelPrefix) {
		return errors.New(msgLabelPrefix(c.labelPrefix))
	}
	if c.mysqlAddress != "" && !validMySQLAddress(c.mysqlAddress) {
		return errors.New(msgMySQLAddress(c.mysqlAddress))
	}
	return nil
}

// trackWriters reports whether the output keeps writer rows in the progress
// table and checks other writers' transactions before it applies a
// partition's messages (takeover.go): always with exactly_once, and with
// at_least_once when pipeline_id and mysql_address are set.
func (c *config) trackWriters() bool {
	return c.mysqlAddress != "" && (c.exactlyOnce || c.pipelineID != "")
}

// headersFor returns the stream-load headers of a table: the defaults, then
// load_properties, then the table's table_properties. They are identical for
// every load of the table within a transaction, as StarRocks requires.
func (c *config) headersFor(db, table string) map[string]string {
	h := make(map[string]string, len(defaultLoadProperties)+len(c.loadProperties))
	set := func(k, v string) {
		// Header names are case-insensitive: the last writer wins whatever
		// its case.
		for old := range h {
			if strings.EqualFold(old, k) {
				delete(h, old)
			}
		}
		h[k] = v
	}
	keys := func(m map[string]string) []string {
		ks := make([]string, 0, len(m))
		for k := range m {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		return ks
	}
	for _, k := range keys(defaultLoadProperties) {
		set(k, defaultLoadProperties[k])
	}
	for _, k := range keys(c.loadProperties) {
		set(k, c.loadProperties[k])
	}
	for _, tp := range c.tableProperties {
		if tp.database == db && tp.table == table {
			for _, k := range keys(tp.props) {
				set(k, tp.props[k])
			}
		}
	}
	return h
}
