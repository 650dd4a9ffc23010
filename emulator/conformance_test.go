package emulator

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/testkit"
)

// The conformance suite replays request sequences written the way StarRocks's SQL regression
// tests are (test/sql/test_stream_load/T and R): curl command lines with the Status they
// answered on a real cluster, and SQL statements with the rows they returned. Each case is one
// entry of conformanceCases, runs on a fresh emulator (with a BE when it asks for one), and
// names its source. To add a case: copy the curl lines of the StarRocks test (or write the
// sequence the behaviour needs), keep ${url} and ${uuid0} as they are (the runner fills them
// in), and give each step the Status (and, where it matters, a Message fragment) or the rows.
//
// Step forms:
//
//	curl(`curl … -XPOST ${url}/api/transaction/begin`, "OK")          Status must equal
//	curlMsg(`…`, "FAILED", "Failed to load table")                    and Message contain
//	exec(`CREATE TABLE …`)                                            a statement, no error
//	query(`SELECT … ORDER BY id`, "1\talice", "2\tbob")               rows, tab-separated
//	execErr(`…`, "does not exist")                                    an error containing
//	curlField(`curl … get_load_state?label=…`, "state", "ABORTED")    a reply field must equal
//	curlTracked(`…`, "FAILED", "'id'", "not_an_int")                 Status, and the rejected rows the
//	                                                                   reply's ErrorURL (or the tracking_url
//	                                                                   in its Message) serves contain each
//	waitAlter("FINISHED")                                             the latest schema change job of the
//	                                                                   database reaches that State (the
//	                                                                   tests' wait_alter_table_finish,
//	                                                                   wait_alter_table_waiting_txn,
//	                                                                   wait_table_schema_change_finish)
//
// curl lines understand -X/-XMETHOD, -H "k:v", -d/--data-binary 'body' (POST unless -X),
// -T is not supported; --location-trusted follows 307s with the credentials, as curl does;
// -u is ignored (the runner authenticates as root). BE URLs: ${be_url}.

type confStep struct {
	curl, status, msg string
	field, value      string
	tracked           []string // fragments of the rejected-row log the reply points at
	sql               string
	isQuery           bool
	rows              []string
	errSub            string
	alterState        string
}

func curl(line, status string) confStep { return confStep{curl: line, status: status} }
func curlMsg(line, status, msg string) confStep {
	return confStep{curl: line, status: status, msg: msg}
}
func curlField(line, field, value string) confStep {
	return confStep{curl: line, field: field, value: value}
}
func curlTracked(line, status string, log ...string) confStep {
	return confStep{curl: line, status: status, tracked: log}
}
func exec(stmt string) confStep            { return confStep{sql: stmt} }
func execErr(stmt, errSub string) confStep { return confStep{sql: stmt, errSub: errSub} }
func query(stmt string, rows ...string) confStep {
	return confStep{sql: stmt, isQuery: true, rows: rows}
}
func waitAlter(state string) confStep { return confStep{alterState: state} }

type confCase struct {
	name    string
	source  string // the StarRocks test (or document) the expectations come from
	be      bool   // start a BE listener
	version string // Config.StarRocksVersion ("": 4.0)
	steps   []confStep
}

// setupDB is the preamble of StarRocks's tests.
var setupDB = []confStep{exec("create database db_${uuid0}"), exec("use db_${uuid0}")}

func withDB(steps ...confStep) []confStep {
	return append(append([]confStep(nil), setupDB...), steps...)
}

const table1 = "CREATE TABLE `table1` (`id` int, `name` varchar(100)) ENGINE=OLAP DUPLICATE KEY(`id`) DISTRIBUTED BY HASH(`id`) BUCKETS 1"
const tableStrict = "CREATE TABLE `table_strict` (`id` int, `name` varchar(100), `required_col` bigint NOT NULL) ENGINE=OLAP DUPLICATE KEY(`id`) DISTRIBUTED BY HASH(`id`) BUCKETS 1"

// c builds the curl lines of the StarRocks tests: H are headers, the rest the method and URL.
func c(label string, extra string, tail string) string {
	return `curl -s --location-trusted -u root: -H "label:` + label + `" -H "Expect:100-continue" -H "db:db_${uuid0}" ` + extra + " " + tail
}

var conformanceCases = []confCase{
	{name: "classic: commit twice, then load, rollback and begin", source: "test_stream_load_basic_txn test_basic_txn_commit_operations",
		steps: withDB(exec(table1),
			curl(c("commit_test_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/begin"), "OK"),
			curl(c("commit_test_${uuid0}", `-H "table:table1" -H "column_separator:,"`, "-d '1,alice' -XPUT ${url}/api/transaction/load"), "OK"),
			curl(c("commit_test_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/commit"), "OK"),
			curl(c("commit_test_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/commit"), "OK"),
			curl(c("commit_test_${uuid0}", `-H "table:table1" -H "column_separator:,"`, "-d '2,bob' -XPUT ${url}/api/transaction/load"), "TXN_NOT_EXISTS"),
			curl(c("commit_test_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/rollback"), "FAILED"),
			query("select * from table1 order by id", "1\talice"),
			curl(c("commit_test_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/begin"), "LABEL_ALREADY_EXISTS"),
		)},
	{name: "classic: rollback twice, then load, commit, and begin again", source: "test_stream_load_basic_txn test_basic_txn_rollback_operations",
		steps: withDB(exec(table1),
			curl(c("rollback_test_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/begin"), "OK"),
			curl(c("rollback_test_${uuid0}", `-H "table:table1" -H "column_separator:,"`, "-d '1,alice' -XPUT ${url}/api/transaction/load"), "OK"),
			curl(c("rollback_test_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/rollback"), "OK"),
			curl(c("rollback_test_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/rollback"), "OK"),
			curl(c("rollback_test_${uuid0}", `-H "table:table1" -H "column_separator:,"`, "-d '2,bob' -XPUT ${url}/api/transaction/load"), "TXN_NOT_EXISTS"),
			curl(c("rollback_test_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/commit"), "FAILED"),
			query("select count(*) from table1", "0"),
			curl(c("rollback_test_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/begin"), "OK"),
		)},
	{name: "classic: never begun, empty commit and rollback, double begin", source: "test_stream_load_basic_txn test_basic_txn_edge_cases",
		steps: withDB(exec(table1),
			curl(c("no_begin_${uuid0}", `-H "table:table1" -H "column_separator:,"`, "-d '1,alice' -XPUT ${url}/api/transaction/load"), "FAILED"),
			curl(c("no_begin_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/commit"), "FAILED"),
			curl(c("no_begin_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/rollback"), "FAILED"),
			curl(c("empty_commit_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/begin"), "OK"),
			curl(c("empty_commit_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/commit"), "INTERNAL_ERROR"),
			curl(c("empty_rollback_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/begin"), "OK"),
			curl(c("empty_rollback_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/rollback"), "OK"),
			curl(c("double_begin_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/begin"), "OK"),
			curl(c("double_begin_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/begin"), "LABEL_ALREADY_EXISTS"),
			curl(c("double_begin_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/rollback"), "OK"),
			query("select count(*) from table1", "0"),
		)},
	{name: "classic: a commit with no load fails and aborts the transaction", source: "test_stream_load_basic_txn test_basic_txn_edge_cases; BE TransactionMgr::commit_transaction rolls back a failed commit; FE TransactionLoadAction on ABORTED (protocol notes §4.3, §4.4)",
		steps: withDB(exec(table1),
			curl(c("empty_commit_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/begin"), "OK"),
			curlMsg(c("empty_commit_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/commit"), "INTERNAL_ERROR", "hasn't send any data yet"),
			curlField(`curl -s -u root: ${url}/api/db_${uuid0}/get_load_state?label=empty_commit_${uuid0}`, "state", "ABORTED"),
			curlMsg(c("empty_commit_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/commit"), "FAILED", "Can not commit ABORTED transaction"),
			curlMsg(c("empty_commit_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/rollback"), "OK", "has already aborted"),
			curl(c("empty_commit_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/begin"), "OK"),
		)},
	{name: "classic: a failed commit or prepare aborts, through the BE", source: "BE TransactionMgr::commit_transaction (need_rollback → _rollback_transaction for commit and prepare); FE TransactionLoadAction on ABORTED", be: true,
		steps: withDB(exec(table1),
			curl(c("fail_commit_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/begin"), "OK"),
			curl(c("fail_commit_${uuid0}", `-H "table:table1" -H "column_separator:,"`, "-d '1,alice' -XPUT ${url}/api/transaction/load"), "OK"),
			curl(`curl -s -X POST -d '{"op":"commit","action":"internal_error"}' ${url}/_emulator/faults`, "OK"),
			curl(c("fail_commit_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/commit"), "INTERNAL_ERROR"),
			curlField(`curl -s -u root: ${url}/api/db_${uuid0}/get_load_state?label=fail_commit_${uuid0}`, "state", "ABORTED"),
			curlMsg(c("fail_commit_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/commit"), "FAILED", "Can not commit ABORTED transaction"),
			curlMsg(c("fail_commit_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/rollback"), "OK", "has already aborted"),
			curl(c("fail_prepare_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/begin"), "OK"),
			curl(c("fail_prepare_${uuid0}", `-H "table:table1" -H "column_separator:,"`, "-d '2,bob' -XPUT ${url}/api/transaction/load"), "OK"),
			curl(`curl -s -X POST -d '{"op":"prepare","action":"internal_error"}' ${url}/_emulator/faults`, "OK"),
			curl(c("fail_prepare_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/prepare"), "INTERNAL_ERROR"),
			curlField(`curl -s -u root: ${url}/api/db_${uuid0}/get_load_state?label=fail_prepare_${uuid0}`, "state", "ABORTED"),
			curl(c("fail_prepare_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/commit"), "FAILED"),
			query("select count(*) from table1", "0"),
		)},
	{name: "multi: a failed commit aborts the transaction", source: "FE StreamLoadMultiStmtTask.commitTxn (a failure → ABORTING → rolled back); manualCancelTask on CANCELLED (protocol notes §5.5, §5.6)",
		steps: withDB(exec(table1),
			curl(c("fail_multi_${uuid0}", `-H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/begin"), "OK"),
			curl(c("fail_multi_${uuid0}", `-H "table:table1" -H "column_separator:," -H "transaction_type:multi"`, "-d '1,alice' -XPUT ${url}/api/transaction/load"), "OK"),
			curl(`curl -s -X POST -d '{"op":"commit","action":"internal_error"}' ${url}/_emulator/faults`, "OK"),
			curl(c("fail_multi_${uuid0}", `-H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/commit"), "INTERNAL_ERROR"),
			curlField(`curl -s -u root: ${url}/api/db_${uuid0}/get_load_state?label=fail_multi_${uuid0}`, "state", "ABORTED"),
			curlMsg(c("fail_multi_${uuid0}", `-H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/commit"), "FAILED", "Can not commit CANCELLED transaction"),
			curlMsg(c("fail_multi_${uuid0}", `-H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/rollback"), "OK", "has already aborted"),
			curl(c("fail_multi_${uuid0}", `-H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/begin"), "LABEL_ALREADY_EXISTS"),
			query("select count(*) from table1", "0"),
		)},
	{name: "multi: commit twice, then load, rollback and begin", source: "test_stream_load_multi_table_rollback test_multi_txn_commit_operations",
		steps: withDB(exec(table1),
			curl(c("commit_test_${uuid0}", `-H "table:table1" -H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/begin"), "OK"),
			curl(c("commit_test_${uuid0}", `-H "table:table1" -H "column_separator:," -H "transaction_type:multi"`, "-d '1,alice' -XPUT ${url}/api/transaction/load"), "OK"),
			curl(c("commit_test_${uuid0}", `-H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/commit"), "OK"),
			curl(c("commit_test_${uuid0}", `-H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/commit"), "OK"),
			curl(c("commit_test_${uuid0}", `-H "table:table1" -H "column_separator:," -H "transaction_type:multi"`, "-d '2,bob' -XPUT ${url}/api/transaction/load"), "FAILED"),
			curl(c("commit_test_${uuid0}", `-H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/rollback"), "FAILED"),
			query("select * from table1 order by id", "1\talice"),
			curl(c("commit_test_${uuid0}", `-H "table:table1" -H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/begin"), "LABEL_ALREADY_EXISTS"),
		)},
	{name: "multi: rollback twice, then load, commit, and no begin again", source: "test_stream_load_multi_table_rollback test_multi_txn_rollback_operations",
		steps: withDB(exec(table1),
			curl(c("rollback_test_${uuid0}", `-H "table:table1" -H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/begin"), "OK"),
			curl(c("rollback_test_${uuid0}", `-H "table:table1" -H "column_separator:," -H "transaction_type:multi"`, "-d '1,alice' -XPUT ${url}/api/transaction/load"), "OK"),
			curl(c("rollback_test_${uuid0}", `-H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/rollback"), "OK"),
			curl(c("rollback_test_${uuid0}", `-H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/rollback"), "OK"),
			curl(c("rollback_test_${uuid0}", `-H "table:table1" -H "column_separator:," -H "transaction_type:multi"`, "-d '2,bob' -XPUT ${url}/api/transaction/load"), "FAILED"),
			curl(c("rollback_test_${uuid0}", `-H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/commit"), "FAILED"),
			query("select count(*) from table1", "0"),
			curl(c("rollback_test_${uuid0}", `-H "table:table1" -H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/begin"), "LABEL_ALREADY_EXISTS"),
		)},
	{name: "multi: never begun, empty commit and rollback OK, double begin", source: "test_stream_load_multi_table_rollback test_multi_txn_edge_cases",
		steps: withDB(exec(table1),
			curl(c("no_begin_${uuid0}", `-H "table:table1" -H "column_separator:," -H "transaction_type:multi"`, "-d '1,alice' -XPUT ${url}/api/transaction/load"), "FAILED"),
			curl(c("no_begin_${uuid0}", `-H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/commit"), "FAILED"),
			curl(c("no_begin_${uuid0}", `-H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/rollback"), "FAILED"),
			curl(c("empty_commit_${uuid0}", `-H "table:table1" -H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/begin"), "OK"),
			curl(c("empty_commit_${uuid0}", `-H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/commit"), "OK"),
			curl(c("empty_rollback_${uuid0}", `-H "table:table1" -H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/begin"), "OK"),
			curl(c("empty_rollback_${uuid0}", `-H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/rollback"), "OK"),
			curl(c("double_begin_${uuid0}", `-H "table:table1" -H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/begin"), "OK"),
			curl(c("double_begin_${uuid0}", `-H "table:table1" -H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/begin"), "LABEL_ALREADY_EXISTS"),
			curl(c("double_begin_${uuid0}", `-H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/rollback"), "OK"),
			query("select count(*) from table1", "0"),
		)},
	{name: "classic: a plan failure at the first load, then rollback", source: "test_stream_load_exception_handling test_basic_txn_load_failure",
		steps: withDB(exec(tableStrict),
			curl(c("load_fail_basic_${uuid0}", `-H "table:table_strict"`, "-XPOST ${url}/api/transaction/begin"), "OK"),
			curlMsg(c("load_fail_basic_${uuid0}", `-H "table:table_strict" -H "column_separator:," -H "columns:id,name"`, "-d '1,alice' -XPUT ${url}/api/transaction/load"), "ANALYSIS_ERROR", "Column has no default value. column: required_col"),
			curl(c("load_fail_basic_${uuid0}", `-H "table:table_strict"`, "-XPOST ${url}/api/transaction/rollback"), "OK"),
			query("select count(*) from table_strict", "0"),
		)},
	{name: "multi: a plan failure at the first load, then rollback", source: "test_stream_load_exception_handling test_multi_txn_load_failure",
		steps: withDB(exec(tableStrict),
			curl(c("load_fail_multi_${uuid0}", `-H "table:table_strict" -H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/begin"), "OK"),
			curl(c("load_fail_multi_${uuid0}", `-H "table:table_strict" -H "column_separator:," -H "columns:id,name" -H "transaction_type:multi"`, "-d '1,alice' -XPUT ${url}/api/transaction/load"), "FAILED"),
			curl(c("load_fail_multi_${uuid0}", `-H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/rollback"), "OK"),
			query("select count(*) from table_strict", "0"),
		)},
	{name: "a plan failure, then commit, in both APIs", source: "test_stream_load_exception_handling test_load_failure_commit_behavior",
		steps: withDB(exec(tableStrict),
			curl(c("basic_fail_commit_${uuid0}", `-H "table:table_strict"`, "-XPOST ${url}/api/transaction/begin"), "OK"),
			curl(c("basic_fail_commit_${uuid0}", `-H "table:table_strict" -H "column_separator:," -H "columns:id,name"`, "-d '1,alice' -XPUT ${url}/api/transaction/load"), "ANALYSIS_ERROR"),
			curl(c("basic_fail_commit_${uuid0}", `-H "table:table_strict"`, "-XPOST ${url}/api/transaction/commit"), "FAILED"),
			curl(c("multi_fail_commit_${uuid0}", `-H "table:table_strict" -H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/begin"), "OK"),
			curl(c("multi_fail_commit_${uuid0}", `-H "table:table_strict" -H "column_separator:," -H "columns:id,name" -H "transaction_type:multi"`, "-d '1,alice' -XPUT ${url}/api/transaction/load"), "FAILED"),
			curl(c("multi_fail_commit_${uuid0}", `-H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/commit"), "FAILED"),
			query("select count(*) from table_strict", "0"),
		)},
	{name: "classic: a plan failure, then a valid load", source: "test_stream_load_exception_handling test_basic_txn_load_failure_then_retry",
		steps: withDB(exec(tableStrict),
			curl(c("basic_retry_${uuid0}", `-H "table:table_strict"`, "-XPOST ${url}/api/transaction/begin"), "OK"),
			curl(c("basic_retry_${uuid0}", `-H "table:table_strict" -H "column_separator:," -H "columns:id,name"`, "-d '1,alice' -XPUT ${url}/api/transaction/load"), "ANALYSIS_ERROR"),
			curl(c("basic_retry_${uuid0}", `-H "table:table_strict" -H "column_separator:,"`, "-d '2,bob,100' -XPUT ${url}/api/transaction/load"), "TXN_NOT_EXISTS"),
			curl(c("basic_retry_${uuid0}", `-H "table:table_strict"`, "-XPOST ${url}/api/transaction/commit"), "FAILED"),
			query("select count(*) from table_strict", "0"),
		)},
	{name: "multi: a plan failure, then a valid load", source: "test_stream_load_exception_handling test_multi_txn_load_failure_then_retry",
		steps: withDB(exec(tableStrict),
			curl(c("multi_retry_${uuid0}", `-H "table:table_strict" -H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/begin"), "OK"),
			curl(c("multi_retry_${uuid0}", `-H "table:table_strict" -H "column_separator:," -H "columns:id,name" -H "transaction_type:multi"`, "-d '1,alice' -XPUT ${url}/api/transaction/load"), "FAILED"),
			curl(c("multi_retry_${uuid0}", `-H "table:table_strict" -H "column_separator:," -H "transaction_type:multi"`, "-d '2,bob,100' -XPUT ${url}/api/transaction/load"), "FAILED"),
			curl(c("multi_retry_${uuid0}", `-H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/commit"), "FAILED"),
			query("select count(*) from table_strict", "0"),
		)},
	{name: "multi: a table whose rows were all rejected is named, its rows tracked", source: "test_multi_table_all_rows_rejected_tracking",
		steps: withDB(
			exec(`CREATE TABLE good_rows (id INT NOT NULL) PRIMARY KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1 PROPERTIES ("replication_num"="1")`),
			exec(`CREATE TABLE rejected_rows (id INT NOT NULL, marker VARCHAR(64)) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1 PROPERTIES ("replication_num"="1")`),
			curl(`curl -s --location-trusted -u root: -H "label:rejected_${uuid0}" -H "db:db_${uuid0}" -H "transaction_type:multi" -XPOST ${url}/api/transaction/begin`, "OK"),
			curl(`curl -s --location-trusted -u root: -H "label:rejected_${uuid0}" -H "db:db_${uuid0}" -H "table:good_rows" -H "transaction_type:multi" -d '1' -XPUT ${url}/api/transaction/load`, "OK"),
			curl(`curl -s --location-trusted -u root: -H "label:rejected_${uuid0}" -H "db:db_${uuid0}" -H "table:rejected_rows" -H "transaction_type:multi" -H "column_separator:," -H "strict_mode:true" -H "max_filter_ratio:1" -d 'not_an_int,pr80351_rejected_${uuid0}' -XPUT ${url}/api/transaction/load`, "OK"),
			curlMsg(`curl -s --location-trusted -u root: -H "label:rejected_${uuid0}" -H "db:db_${uuid0}" -H "transaction_type:multi" -XPOST ${url}/api/transaction/commit`, "FAILED", "Failed to load table rejected_rows"),
			query("select count(*) from good_rows", "0"),
			query("select count(*) from rejected_rows", "0"),
			query("select STATE, SINK_ROWS, FILTERED_ROWS from information_schema.loads where DB_NAME='db_${uuid0}' and LABEL='rejected_${uuid0}' and TABLE_NAME='rejected_rows'", "CANCELLED\t0\t1"),
			query("select count(*) from information_schema.load_tracking_logs l join information_schema.loads s on l.job_id = s.ID where s.LABEL='rejected_${uuid0}' and l.TRACKING_LOG like '%pr80351_rejected_${uuid0}%'", "1"),
		)},
	{name: "rows all rejected: every API's reply points at them, with column and value", source: "BE StreamLoadContext::to_json and to_resp_json (ErrorURL whenever the load wrote an error log); test_multi_table_all_rows_rejected_tracking (tracking_url in the FE Message)", be: true,
		steps: withDB(exec(table1),
			// plain stream load: all rows filtered within max_filter_ratio, then beyond it
			curlTracked(`curl -s --location-trusted -u root: -H "label:plain1_${uuid0}" -H "column_separator:," -H "strict_mode:true" -H "max_filter_ratio:1" -XPUT -d 'not_an_int,a' ${url}/api/db_${uuid0}/table1/_stream_load`, "Fail", "'id'", "not_an_int"),
			curlTracked(`curl -s --location-trusted -u root: -H "label:plain0_${uuid0}" -H "column_separator:," -H "strict_mode:true" -XPUT -d 'not_an_int,a' ${url}/api/db_${uuid0}/table1/_stream_load`, "Fail", "'id'", "not_an_int"),
			// classic transaction, both ways
			curl(c("classic1_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/begin"), "OK"),
			curl(c("classic1_${uuid0}", `-H "table:table1" -H "column_separator:," -H "strict_mode:true" -H "max_filter_ratio:1"`, "-d '12345678901,b' -XPUT ${url}/api/transaction/load"), "OK"),
			curlTracked(c("classic1_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/commit"), "INTERNAL_ERROR", "'id'", "12345678901"),
			curlField(`curl -s -u root: ${url}/api/db_${uuid0}/get_load_state?label=classic1_${uuid0}`, "state", "ABORTED"),
			curl(c("classic0_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/begin"), "OK"),
			curl(c("classic0_${uuid0}", `-H "table:table1" -H "column_separator:," -H "strict_mode:true"`, "-d 'one,c' -XPUT ${url}/api/transaction/load"), "OK"),
			curlTracked(c("classic0_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/commit"), "INTERNAL_ERROR", "'id'", "one"),
			// multi-table transaction: the FE names the table and gives the URL in the Message
			curl(c("multi_${uuid0}", `-H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/begin"), "OK"),
			curl(c("multi_${uuid0}", `-H "table:table1" -H "column_separator:," -H "strict_mode:true" -H "max_filter_ratio:1" -H "transaction_type:multi"`, "-d 'abc,d' -XPUT ${url}/api/transaction/load"), "OK"),
			curlTracked(c("multi_${uuid0}", `-H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/commit"), "FAILED", "'id'", "abc"),
			query("select count(*) from table1", "0"),
		)},
	{name: "a BE refuses a multi-table begin", source: "test_be_reject_transaction_type", be: true,
		steps: withDB(
			exec(`create table dummy_table (id int) distributed by hash(id) buckets 1 properties("replication_num" = "1")`),
			curlMsg(`curl --location-trusted -u root: -H "label:test_multi_${uuid0}" -H "db:db_${uuid0}" -H "table:dummy_table" -H "transaction_type:multi" -XPOST "${be_url}/api/transaction/begin"`,
				"INVALID_ARGUMENT", "Multi-statement transaction requests can only be sent to FE nodes, not BE nodes"),
		)},
	{name: "plain stream load of '1', then a classic transaction with prepare through the BE", source: "test_stream_load_txn_coordinator", be: true,
		steps: withDB(
			exec("CREATE TABLE `test` (`id` int) ENGINE=OLAP DUPLICATE KEY(`id`) DISTRIBUTED BY HASH(`id`) BUCKETS 10 PROPERTIES (\"replication_num\" = \"1\")"),
			curlMsg(`curl --location-trusted -u root: -H "Expect:100-continue"  -X PUT -d '1' ${url}/api/db_${uuid0}/test/_stream_load`, "Success", "OK"),
			curl(`curl --location-trusted -u root: -H "label:test" -H "db:db_${uuid0}" -H "table:test" -XPOST ${url}/api/transaction/begin`, "OK"),
			curl(`curl --location-trusted -u root: -H "label:test" -H "Expect:100-continue" -H "db:db_${uuid0}" -H "table:test" -d '1' -X PUT  ${url}/api/transaction/load`, "OK"),
			curl(`curl --location-trusted -u root: -H "label:test" -H "db:db_${uuid0}" -XPOST ${url}/api/transaction/prepare`, "OK"),
			curl(`curl --location-trusted -u root: -H "label:test" -H "db:db_${uuid0}" -XPOST ${url}/api/transaction/commit`, "OK"),
			query("select count(*) from test", "2"),
		)},
	{name: "CSV bodies of one table form one stream", source: "docs/notes/starrocks-protocol.md §4.2 (BE-TSL pipe; [T] '1,alice' loads without a delimiter)",
		steps: withDB(exec(table1),
			curl(c("stream_${uuid0}", `-H "table:table1" -H "column_separator:," -H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/begin"), "OK"),
			curl(c("stream_${uuid0}", `-H "table:table1" -H "column_separator:," -H "transaction_type:multi"`, "-d '1,al' -XPUT ${url}/api/transaction/load"), "OK"),
			curl(c("stream_${uuid0}", `-H "table:table1" -H "column_separator:," -H "transaction_type:multi"`, "-d 'ice' -XPUT ${url}/api/transaction/load"), "OK"),
			curl(c("stream_${uuid0}", `-H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/commit"), "OK"),
			query("select * from table1", "1\talice"),
		)},
	{name: "default format is CSV separated by tabs", source: "STREAM_LOAD doc (column_separator default \\t)",
		steps: withDB(exec(table1),
			curlMsg(`curl -s --location-trusted -u root: -H "label:tab_${uuid0}" -XPUT --data-binary '7`+"\t"+`tab' ${url}/api/db_${uuid0}/table1/_stream_load`, "Success", "OK"),
			query("select * from table1", "7\ttab"),
		)},
	{name: "the columns header: a plain list, casts and expressions", source: "test_stream_load_columns; STREAM_LOAD doc (column mapping)",
		steps: withDB(exec("CREATE TABLE t (id INT NOT NULL, name VARCHAR(20), score BIGINT, tag VARCHAR(10)) DUPLICATE KEY(id)"),
			curl(`curl -s --location-trusted -u root: -H "label:cols_${uuid0}" -H "column_separator:," -H "columns: tmp_id, raw, id = cast(tmp_id as int), name = upper(raw), score = cast(tmp_id as bigint) * 10, tag = 'k'" -XPUT -d '3,bob' ${url}/api/db_${uuid0}/t/_stream_load`, "Success"),
			query("select * from t", "3\tBOB\t30\tk"),
		)},
	{name: "AGGREGATE KEY merges by each column's aggregation", source: "Aggregate table doc (SUM, MAX, MIN, REPLACE, REPLACE_IF_NOT_NULL)",
		steps: withDB(exec(`CREATE TABLE agg (k INT NOT NULL, s BIGINT SUM, mx INT MAX, mn INT MIN, r VARCHAR(5) REPLACE, rn VARCHAR(5) REPLACE_IF_NOT_NULL) AGGREGATE KEY(k) DISTRIBUTED BY HASH(k)`),
			curl(`curl -s --location-trusted -u root: -H "label:agg1_${uuid0}" -H "column_separator:," -XPUT --data-binary '1,1,5,5,a,a' ${url}/api/db_${uuid0}/agg/_stream_load`, "Success"),
			curl(`curl -s --location-trusted -u root: -H "label:agg2_${uuid0}" -H "column_separator:," -XPUT --data-binary '1,2,3,3,\N,\N' ${url}/api/db_${uuid0}/agg/_stream_load`, "Success"),
			query("select * from agg", "1\t3\t5\t3\tNULL\ta"),
		)},
	{name: "ARRAY and MAP columns load from JSON", source: "Array and Map type docs (JSON load)",
		steps: withDB(exec(`CREATE TABLE cx (id INT NOT NULL, a ARRAY<INT>, m MAP<VARCHAR(5),INT>) DUPLICATE KEY(id)`),
			curl(`curl -s --location-trusted -u root: -H "label:cx_${uuid0}" -H "format:json" -XPUT -d '{"id":1,"a":[1,"2"],"m":{"x":3}}' ${url}/api/db_${uuid0}/cx/_stream_load`, "Success"),
			query("select id, a, m from cx", "1\t[1,2]\t{\"x\":3}"),
		)},
	{name: "a MAP with numeric keys prints them bare", source: "MAP type doc (map(1,1,2,2,3,3) returns {1:1,2:2,3:3}; MAP<VARCHAR,INT> prints {\"a\":1})",
		steps: withDB(exec(`CREATE TABLE mk (id INT NOT NULL, m MAP<INT,VARCHAR(5)>, n MAP<VARCHAR(5),MAP<BIGINT,INT>>) DUPLICATE KEY(id)`),
			curl(`curl -s --location-trusted -u root: -H "label:mk_${uuid0}" -H "format:json" -XPUT -d '{"id":1,"m":{"1":"a","2":"b"},"n":{"k":{"7":1}}}' ${url}/api/db_${uuid0}/mk/_stream_load`, "Success"),
			curl(`curl -s --location-trusted -u root: -H "label:mk2_${uuid0}" -H "column_separator:|" -XPUT -d '2|{3:"c"}|{"j":{8:2}}' ${url}/api/db_${uuid0}/mk/_stream_load`, "Success"),
			query("select id, m, n from mk order by id", "1\t{1:\"a\",2:\"b\"}\t{\"k\":{7:1}}", "2\t{3:\"c\"}\t{\"j\":{8:2}}"),
		)},
	{name: "integer fields and casts as StarRocks converts them", source: "formats/csv/numeric_converter.cpp (a fraction truncates); exprs/cast_expr.cpp (CAST of a non-integer string is NULL); strict mode doc",
		steps: withDB(exec(`CREATE TABLE nums (id INT NOT NULL, v INT, c INT) DUPLICATE KEY(id)`),
			curl(`curl -s --location-trusted -u root: -H "label:n1_${uuid0}" -H "column_separator:," -H "columns: id, v, raw, c = cast(raw as int)" -XPUT --data-binary '1,1.5,1.5`+"\n"+`2,abc,abc`+"\n"+`3,,`+"\n"+`4,3000000000,7`+"\n"+`5, 42 ,42' ${url}/api/db_${uuid0}/nums/_stream_load`, "Success"),
			query("select id, v, c from nums order by id", "1\t1\tNULL", "2\tNULL\tNULL", "3\tNULL\tNULL", "4\tNULL\t7", "5\t42\t42"),
			curlTracked(`curl -s --location-trusted -u root: -H "label:n2_${uuid0}" -H "column_separator:," -H "strict_mode:true" -XPUT -d '6,abc,1' ${url}/api/db_${uuid0}/nums/_stream_load`, "Fail", "'v'", "abc"),
			curl(`curl -s --location-trusted -u root: -H "label:n3_${uuid0}" -H "column_separator:," -H "strict_mode:true" -XPUT -d '7,2.9,1' ${url}/api/db_${uuid0}/nums/_stream_load`, "Success"),
			query("select v from nums where id = 7", "2"),
		)},
	{name: "ALTER TABLE ADD and DROP COLUMN, then a load", source: "ALTER TABLE doc (schema change)",
		steps: withDB(exec(table1),
			exec("ALTER TABLE table1 ADD COLUMN score INT DEFAULT \"0\""),
			exec("ALTER TABLE table1 DROP COLUMN name"),
			curl(`curl -s --location-trusted -u root: -H "label:alter_${uuid0}" -H "column_separator:," -XPUT -d '1,9' ${url}/api/db_${uuid0}/table1/_stream_load`, "Success"),
			query("select * from table1", "1\t9"),
			execErr("ALTER TABLE table1 DROP COLUMN id", "No key column left. index[table1]"),
			exec("TRUNCATE TABLE table1"),
			query("select count(*) from table1", "0"),
			exec("DROP TABLE table1"),
			execErr("select * from table1", "table not found"),
		)},
}

// conformanceCasesV3 are the StarRocks 3.x cases: the classic ones above again, on a 3.3 FE
// and BE (StarRocks's classic tests answer the same there: the flow predates 4.0), and the
// 3.x-only ones (docs/notes/starrocks-protocol.md §12).
func conformanceCasesV3() []confCase {
	var out []confCase
	for _, cc := range conformanceCases {
		if strings.HasPrefix(cc.name, "classic:") || strings.HasPrefix(cc.name, "plain stream load") {
			cc.name, cc.version = "3.3 "+cc.name, "3.3"
			out = append(out, cc)
		}
	}
	v3 := []confCase{
		{name: "3.3: a multi-table begin is a begin without a table; the label stays free", version: "3.3", be: true,
			source: "3.3.7 TransactionLoadAction (no transaction_type; begin → 307, getNodeId), transaction_mgr.cpp _begin_transaction (no table check), FrontendServiceImpl.loadTxnBeginImpl (unknown table) (protocol notes §12.1)",
			steps: withDB(exec(table1),
				curlMsg(c("multi_${uuid0}", `-H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/begin"), "ANALYSIS_ERROR", `unknown table "db_${uuid0}."`),
				curlField(`curl -s -u root: ${url}/api/db_${uuid0}/get_load_state?label=multi_${uuid0}`, "state", "UNKNOWN"),
				curlMsg(c("never_${uuid0}", `-H "table:table1" -H "column_separator:," -H "transaction_type:multi"`, "-d '1,alice' -XPUT ${url}/api/transaction/load"), "FAILED",
					"class com.starrocks.common.UserException: Transaction with op[load] and label[never_${uuid0}] has no node."),
				curlMsg(c("never_${uuid0}", `-H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/commit"), "FAILED", "No transaction found by label never_${uuid0}"),
				curlMsg(c("never_${uuid0}", `-H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/rollback"), "FAILED", "No transaction found by label never_${uuid0}"),
				curl(c("multi_${uuid0}", `-H "table:table1" -H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/begin"), "OK"),
				curl(c("multi_${uuid0}", `-H "table:table1" -H "column_separator:," -H "transaction_type:multi"`, "-d '1,alice' -XPUT ${url}/api/transaction/load"), "OK"),
				curl(c("multi_${uuid0}", `-H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/prepare"), "OK"),
				curlField(`curl -s -u root: ${url}/api/db_${uuid0}/get_load_state?label=multi_${uuid0}`, "state", "PREPARED"),
				curl(c("multi_${uuid0}", `-H "transaction_type:multi"`, "-XPOST ${url}/api/transaction/commit"), "OK"),
				query("select * from table1", "1\talice"),
			)},
		{name: "3.3: a BE does not refuse transaction_type", version: "3.3", be: true,
			source: "3.3.7 TransactionManagerAction::handle (no transaction_type check; 4.x: test_be_reject_transaction_type) (protocol notes §12.1)",
			steps: withDB(
				exec(`create table dummy_table (id int) distributed by hash(id) buckets 1 properties("replication_num" = "1")`),
				curl(`curl --location-trusted -u root: -H "label:test_multi_${uuid0}" -H "db:db_${uuid0}" -H "table:dummy_table" -H "transaction_type:multi" -XPOST "${be_url}/api/transaction/begin"`, "OK"),
				curl(`curl --location-trusted -u root: -H "label:test_multi_${uuid0}" -H "db:db_${uuid0}" -H "transaction_type:multi" -XPOST "${be_url}/api/transaction/rollback"`, "OK"),
			)},
		{name: "3.3: prepared_timeout is not read before 3.5.4", version: "3.3",
			source: "test_prepared_timeout (added with StarRocks PR #61539, 3.5.4); 3.3.7 transaction_mgr.cpp (no prepared_timeout) (protocol notes §12.3)",
			steps: withDB(exec(table1),
				curl(c("pt_${uuid0}", `-H "table:table1"`, "-XPOST ${url}/api/transaction/begin"), "OK"),
				curl(c("pt_${uuid0}", `-H "table:table1" -H "column_separator:,"`, "-d '1,alice' -XPUT ${url}/api/transaction/load"), "OK"),
				curl(c("pt_${uuid0}", `-H "prepared_timeout:0"`, "-XPOST ${url}/api/transaction/prepare"), "OK"),
				curl(c("pt_${uuid0}", ``, "-XPOST ${url}/api/transaction/commit"), "OK"),
				query("select * from table1", "1\talice"),
			)},
		{name: "3.5.4: prepare with prepared_timeout, commit", version: "3.5.4",
			source: "test_prepared_timeout (test_normal, test_default); BE prepared_timeout must be > 0 (protocol notes §2.1, §12.3)",
			steps: withDB(exec(table1),
				curl(c("test_normal", `-H "table:table1"`, "-XPOST ${url}/api/transaction/begin"), "OK"),
				curl(c("test_normal", `-H "table:table1" -H "column_separator:,"`, "-d '1,alice' -XPUT ${url}/api/transaction/load"), "OK"),
				curlMsg(c("test_normal", `-H "prepared_timeout:0"`, "-XPOST ${url}/api/transaction/prepare"), "INVALID_ARGUMENT", "Invalid prepared_timeout: 0"),
				curl(c("test_normal", `-H "prepared_timeout:300"`, "-XPOST ${url}/api/transaction/prepare"), "OK"),
				curl(c("test_normal", ``, "-XPOST ${url}/api/transaction/commit"), "OK"),
				curl(c("test_default", `-H "table:table1"`, "-XPOST ${url}/api/transaction/begin"), "OK"),
				curl(c("test_default", `-H "table:table1" -H "column_separator:,"`, "-d '2,bob' -XPUT ${url}/api/transaction/load"), "OK"),
				curl(c("test_default", ``, "-XPOST ${url}/api/transaction/prepare"), "OK"),
				curl(c("test_default", ``, "-XPOST ${url}/api/transaction/commit"), "OK"),
				query("select * from table1 order by id", "1\talice", "2\tbob"),
			)},
	}
	return append(out, v3...)
}

func TestConformance(t *testing.T) {
	t.Parallel()
	for i, cc := range append(conformanceCases, conformanceCasesV3()...) {
		t.Run(cc.name, func(t *testing.T) {
			t.Parallel()
			e := startEmu(t, func(c *Config) {
				c.MySQLAddr = "127.0.0.1:0"
				c.StarRocksVersion = cc.version
				c.Schema = ""
				if cc.be {
					c.BEAddr = "127.0.0.1:0"
				}
			})
			uuid := fmt.Sprintf("c%d", i)
			vars := strings.NewReplacer("${url}", e.FEURL(), "${be_url}", e.BEURL(), "${uuid0}", uuid)
			db, err := sql.Open("mysql", "root:@tcp("+e.MySQLAddr()+")/")
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })
			conn, err := db.Conn(context.Background())
			require.NoError(t, err)
			t.Cleanup(func() { _ = conn.Close() })
			for n, st := range cc.steps {
				where := fmt.Sprintf("step %d of %s (%s)", n+1, cc.name, cc.source)
				switch {
				case st.alterState != "":
					waitAlterState(t, conn, st.alterState, where)
				case st.curl != "":
					status, msg, raw := runCurl(t, vars.Replace(st.curl))
					if st.field != "" {
						var m map[string]any
						require.NoError(t, json.Unmarshal([]byte(raw), &m), "%s: %s", where, raw)
						require.Equal(t, st.value, fmt.Sprint(m[st.field]), "%s: %s\n%s", where, vars.Replace(st.curl), raw)
						continue
					}
					require.Equal(t, st.status, status, "%s: %s\n%s", where, vars.Replace(st.curl), raw)
					if st.msg != "" {
						require.Contains(t, msg, vars.Replace(st.msg), where)
					}
					if st.tracked != nil {
						log := trackedLog(t, raw)
						for _, frag := range st.tracked {
							require.Contains(t, log, vars.Replace(frag), "%s: the rejected rows of %s", where, raw)
						}
					}
				case st.isQuery:
					got := sqlRows(t, conn, vars.Replace(st.sql))
					want := st.rows
					if want == nil {
						want = []string{}
					}
					require.Equal(t, want, got, "%s: %s", where, st.sql)
				default:
					_, err := conn.ExecContext(context.Background(), vars.Replace(st.sql))
					if st.errSub != "" {
						require.ErrorContains(t, err, st.errSub, where)
						continue
					}
					require.NoError(t, err, "%s: %s", where, st.sql)
				}
			}
		})
	}
}

// waitAlterState polls the newest schema change job of the session's database until its
// State is want, failing when it settles on another final state.
func waitAlterState(t *testing.T, conn *sql.Conn, want, where string) {
	t.Helper()
	var state string
	var rows []string
	testkit.Poll(30*time.Second, func() bool {
		state = ""
		rows = sqlRows(t, conn, "SHOW ALTER TABLE COLUMN ORDER BY JobId DESC LIMIT 1")
		if len(rows) == 1 {
			f := strings.Split(rows[0], "\t")
			state = f[9]
		}
		return state == want || state == "FINISHED" || state == "CANCELLED"
	})
	require.Equal(t, want, state, "%s: the newest schema change job: %v", where, rows)
}

func sqlRows(t *testing.T, conn *sql.Conn, q string) []string {
	t.Helper()
	rows, err := conn.QueryContext(context.Background(), q)
	require.NoError(t, err, q)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	out := []string{}
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		cells := make([]string, len(cols))
		for i, v := range vals {
			cells[i] = "NULL"
			if v.Valid {
				cells[i] = v.String
			}
		}
		out = append(out, strings.Join(cells, "\t"))
	}
	require.NoError(t, rows.Err())
	return out
}

var trackingURLRe = regexp.MustCompile(`tracking_url: (http[^\s},]+)`)

// trackedLog fetches the rejected-row log a reply points at: the ErrorURL of a BE reply, or
// the tracking_url inside an FE Message.
func trackedLog(t *testing.T, raw string) string {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(raw), &m), raw)
	url, _ := m["ErrorURL"].(string)
	if url == "" {
		msg, _ := m["Message"].(string)
		sub := trackingURLRe.FindStringSubmatch(msg)
		require.NotNil(t, sub, "the reply points at no rejected rows: %s", raw)
		url = sub[1]
	}
	// StarRocks serves the error log without credentials; the emulator asks for the API's
	// (see TestControlAPIAndErrorLogNeedAuth), so the runner sends them, as -u does.
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err, url)
	req.SetBasicAuth("root", "")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err, url)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s: %s", url, b)
	return string(b)
}

// shellWords splits a command line the way sh does for the forms the tests use: single
// quotes literal, double quotes with \" and \\ escapes, backslash outside quotes.
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	in := false
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case ch == '\'':
			in = true
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				j = len(line) - i - 1
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
		case ch == '"':
			in = true
			for i++; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) && (line[i+1] == '"' || line[i+1] == '\\') {
					i++
				}
				cur.WriteByte(line[i])
			}
		case ch == ' ' || ch == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(ch)
			in = true
		}
	}
	if cur.Len() > 0 || in {
		words = append(words, cur.String())
	}
	return words
}

// runCurl performs one curl command line and returns the reply's Status (or status) and
// Message (or msg).
func runCurl(t *testing.T, line string) (status, msg, raw string) {
	t.Helper()
	words := shellWords(line)
	require.Equal(t, "curl", words[0], line)
	method, url, body, hasBody, follow := "", "", "", false, false
	h := http.Header{}
	for i := 1; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "-X":
			i++
			method = words[i]
		case strings.HasPrefix(w, "-X"):
			method = w[2:]
		case w == "-H":
			i++
			k, v, _ := strings.Cut(words[i], ":")
			h.Set(strings.TrimSpace(k), strings.TrimSpace(v))
		case w == "-d" || w == "--data-binary" || w == "--data":
			i++
			body, hasBody = words[i], true
		case w == "-u":
			i++
		case w == "--location-trusted" || w == "-L":
			follow = true
		case w == "-s":
		case strings.HasPrefix(w, "-"):
			t.Fatalf("the conformance runner does not know the curl option %s", w)
		default:
			url = w
		}
	}
	if method == "" {
		method = http.MethodGet
		if hasBody {
			method = http.MethodPost
		}
	}
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for hop := 0; ; hop++ {
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		require.NoError(t, err)
		req.Header = h.Clone()
		req.SetBasicAuth("root", "")
		res, err := hc.Do(req)
		require.NoError(t, err, line)
		b, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if follow && res.StatusCode == http.StatusTemporaryRedirect && hop < 3 {
			url = res.Header.Get("Location")
			continue
		}
		r := resp{code: res.StatusCode, raw: string(b)}
		_ = json.Unmarshal(b, &r.m)
		status, msg = r.str("Status"), r.str("Message")
		if status == "" {
			status, msg = r.str("status"), r.str("msg")
		}
		return status, msg, string(b)
	}
}

func TestShellWords(t *testing.T) {
	t.Parallel()
	assert.Equal(t, []string{"curl", "-H", "label:a b", "-d", "1,\"x\"", "-XPUT", "u"},
		shellWords(`curl -H "label:a b" -d '1,"x"' -XPUT u`))
	assert.Equal(t, []string{"a", "", "b\"c"}, shellWords(`a '' "b\"c"`))
}
