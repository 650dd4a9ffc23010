package lint

import "gopkg.in/yaml.v3"

// The warnings that explain starrocks_txn's transaction_mode (ARCHITECTURE.md
// §15): the config runs, but not with what the user may expect of it.
const (
	// msgPerTableWithoutDecision: per_table (or auto, which is per_table on
	// StarRocks 3.x) keeps a cycle's decision in the writers table, which
	// needs mysql_address and pipeline_id (or exactly_once).
	msgPerTableWithoutDecision = "starrocks_txn transaction_mode %s without writer rows (mysql_address with pipeline_id, or semantic exactly_once): on StarRocks 3.x each cycle's tables are prepared and then committed one by one with no decision record, so a crash between those commits leaves a source transaction partly visible until the replay from Kafka completes it (at least once), and the dead run's prepared transactions wait for their prepared timeout; set mysql_address and pipeline_id"
	// msgPreparedTimeoutUnused: prepared_timeout only applies per table.
	msgPreparedTimeoutUnused = "starrocks_txn prepared_timeout is set with transaction_mode multi_table, which prepares nothing: it applies to per_table (and auto on StarRocks 3.x) only"
)

// transactionMode warns, for one starrocks_txn output, about a per-table
// mode that keeps no decision and a prepared_timeout that nothing reads.
// Values it cannot read (interpolated) warn nothing.
func transactionMode(out *yaml.Node, warn func(*yaml.Node, string, ...any)) {
	out = orEmpty(out)
	modeNode := mapValue(out, "transaction_mode")
	mode := "auto"
	if modeNode != nil {
		if modeNode.Kind != yaml.ScalarNode {
			return
		}
		mode = modeNode.Value
	}
	if pt := mapValue(out, "prepared_timeout"); pt != nil && mode == "multi_table" {
		if d, ok := durationOf(pt, 0); ok && d > 0 {
			warn(pt, msgPreparedTimeoutUnused)
		}
	}
	if mode != "per_table" {
		// auto is per_table only against 3.x, which lint cannot know: the
		// output logs its decision at start.
		return
	}
	semantic := mapValue(out, "semantic")
	if semantic != nil && semantic.Value == "exactly_once" {
		return
	}
	mysql, pipeline := mapValue(out, "mysql_address"), mapValue(out, "pipeline_id")
	if mysql != nil && mysql.Value != "" && pipeline != nil && pipeline.Value != "" {
		return
	}
	at := modeNode
	warn(at, msgPerTableWithoutDecision, mode)
}
