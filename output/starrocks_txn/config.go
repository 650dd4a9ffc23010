// Package starrocks_txn is the starrocks_txn output: it loads source
// transactions, as stamped by the txn_assembler processor (or a hand-written
// mapping), into StarRocks multi-table transactions under one shared label per
// database and commit cycle, and acknowledges a message only once StarRocks
// has committed it (ARCHITECTURE.md §4).
package starrocks_txn

// Home of G39 (ARCHITECTURE.md §11.1): no identifier reaches SQL unchecked. Main test:
// TestProgressTableValidatedInEveryMode.

import (
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/starrocks-txn/benthos-starrocks/output/starrocks_txn/schemasync"
	"sort"
	"strings"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"gopkg.in/yaml.v3"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

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
	loadURLs []string
	username string
	password string
	database *service.InterpolatedString
	// literalDatabase and literalTable hold database and table when they
	// are written without interpolation (nil otherwise): validate checks
	// such a name before anything starts.
	literalDatabase, literalTable *string
	// dbMetaKeys and tableMetaKeys are the metadata keys database and
	// table read (metaKeysOf).
	dbMetaKeys, tableMetaKeys []string
	table                     *service.InterpolatedString
	// dbFromContract and tableFromContract are set when database and table
	// are their defaults, which read the contract's keys: parseBody then
	// takes the values the contract parse already read (targets.go).
	dbFromContract, tableFromContract bool
	commitInterval                    time.Duration
	bufferSize                        int64
	txnTimeout                        time.Duration
	labelPrefix                       string
	loadProperties                    map[string]string
	tableProperties                   []tableProps
	maxInFlight                       int
	maxDatabases                      int
	retryInitial                      time.Duration
	retryMax                          time.Duration
	sequenceGapTimeout                time.Duration
	compression                       string
	tls                               *tls.Config
	requestTimeout                    time.Duration
	labelStateWait                    time.Duration
	unknownCommit                     time.Duration
	mysqlTimeout                      time.Duration
	batching                          service.BatchPolicy
	mysqlAddress                      string
	// schemaMode is schema_evolution (ARCHITECTURE.md §14); empty in a
	// config built in code: no schema checks, as ignore without
	// mysql_address. createTableProps are create_table_properties;
	// stallRetryInterval is stall_retry_interval.
	schemaMode         string
	createTableProps   map[string]string
	stallRetryInterval time.Duration
	progressTable      string
	exactlyOnce        bool
	pipelineID         string
	conn               connConfig
	// mode is transaction_mode and prepared_timeout (mode.go).
	mode modeConfig
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
	c.dbFromContract = rawIs(conf, fieldDatabase, defaultDatabase)
	c.tableFromContract = rawIs(conf, fieldTable, defaultTable)
	if c.literalDatabase, err = rawLiteral(conf, fieldDatabase); err != nil {
		return
	}
	if c.literalTable, err = rawLiteral(conf, fieldTable); err != nil {
		return
	}
	if c.dbMetaKeys, err = metaKeysOf(conf, fieldDatabase); err != nil {
		return
	}
	if c.tableMetaKeys, err = metaKeysOf(conf, fieldTable); err != nil {
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
	if c.schemaMode, err = conf.FieldString(fieldSchemaEvolution); err != nil {
		return
	}
	if c.createTableProps, err = conf.FieldStringMap(fieldCreateTableProps); err != nil {
		return
	}
	if c.stallRetryInterval, err = durationField(conf, fieldStallRetry); err != nil {
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
	if c.mode, err = modeConfigFromParsed(conf); err != nil {
		return
	}
	if err = c.validate(); err != nil {
		return
	}
	err = checkDeadLetterBatching(conf)
	return
}

// checkDeadLetterBatching refuses a batching policy anywhere under
// dead_letter, with the lint rule's text.
func checkDeadLetterBatching(conf *service.ParsedConfig) error {
	if !deadLetterSet(conf) {
		return nil
	}
	v, err := conf.FieldAny(fieldDeadLetter)
	if err != nil {
		return err
	}
	var n *yaml.Node
	switch x := v.(type) {
	case *yaml.Node:
		n = x
	case yaml.Node:
		n = &x
	}
	if n != nil {
		var decoded any
		if err := n.Decode(&decoded); err != nil {
			return fmt.Errorf("reading dead_letter: %w", err)
		}
		v = decoded
	}
	if paths := deadLetterBatching(v); len(paths) > 0 {
		return errors.New(paths[0] + msgDeadLetterBatchingTail)
	}
	return nil
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
	if c.literalDatabase != nil {
		if err := starrocks.ValidateName("database", *c.literalDatabase); err != nil {
			return fmt.Errorf("%s: %w", fieldDatabase, err)
		}
	}
	if c.literalTable != nil {
		if err := starrocks.ValidateName("table", *c.literalTable); err != nil {
			return fmt.Errorf("%s: %w", fieldTable, err)
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
	if c.schemaMode != "" {
		if _, err := schemasync.ParseMode(c.schemaMode); err != nil {
			return err
		}
		if c.schemaMode != schemasync.ModeIgnore && c.mysqlAddress == "" {
			return fmt.Errorf("schema_evolution: %s (the default is evolve) %s", c.schemaMode, msgSchemaNeedsMySQLTail)
		}
		if c.stallRetryInterval <= 0 {
			return errors.New(msgStallRetry)
		}
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
	return c.mode.validate(c.requestTimeout)
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
