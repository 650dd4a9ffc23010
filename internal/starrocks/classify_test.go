package starrocks

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The texts below are the ones docs/notes/starrocks-protocol.md quotes from the
// StarRocks sources (§1.2, §4, §5, §6, §8).
func TestClassify(t *testing.T) {
	const (
		cls       = "class com.starrocks.common.StarRocksException: "
		noRows    = "No rows were imported from upstream. Possible causes: 1) all rows were filtered by load conditions, 2) all rows failed data quality/validation checks, or 3) upstream has no data. If this is acceptable, set `ADMIN SET FRONTEND CONFIG ('empty_load_as_error' = 'false')` to ignore empty loads"
		noParts   = "No partitions have data available for loading. If you are sure there may be no data to be loaded, you can use `ADMIN SET FRONTEND CONFIG ('empty_load_as_error' = 'false')` to ensure such load jobs can succeed"
		wrapStart = "STREAM_LOAD_TASK:10042, label{p-db-1}, error_msg{cancel stream task for exception: "
	)
	cases := []struct {
		op       string
		code     int
		status   string
		message  string
		existing string
		want     Class
	}{
		// begin
		{OpBegin, 200, "OK", "", "", ClassOK},
		{OpBegin, 200, "LABEL_ALREADY_EXISTS", "Label [p-db-1] has already been used.", "RUNNING", ClassTransient},
		{OpBegin, 200, "LABEL_ALREADY_EXISTS", "Label [p-db-1] has already been used.", "FINISHED", ClassTransient},
		{OpBegin, 200, "LABEL_ALREADY_EXISTS", "Transaction already started with label [p-db-1], txnId: 9032", "BEGIN", ClassTransient},
		{OpBegin, 200, "FAILED", cls + "current running txns on db 10011 is 1000, larger than limit 1000", "", ClassTransient},
		{OpBegin, 200, "FAILED", cls + "Empty label.", "", ClassFatal},
		{OpBegin, 200, "FAILED", cls + "No database selected.", "", ClassFatal},
		{OpBegin, 200, "FAILED", cls + "Database[nodb] does not exist", "", ClassPerTxn},
		{OpBegin, 200, "INVALID_ARGUMENT", "Invalid timeout format", "", ClassFatal},
		{OpBegin, 200, "INVALID_ARGUMENT", "Multi-statement transaction requests can only be sent to FE nodes, not BE nodes", "", ClassFatal},
		{OpBegin, 200, "INTERNAL_ERROR", "failed to begin", "", ClassTransient},
		{OpBegin, 200, "", "", "", ClassFatal}, // no Status: no transaction interface
		{OpBegin, 401, "FAILED", "Access denied for user 'u'", "", ClassFatal},
		{OpBegin, 200, "FAILED", "Access denied; you need (at least one of) the INSERT privilege(s)", "", ClassFatal},
		{OpBegin, 0, "", "", "", ClassTransient},
		{OpBegin, 503, "", "", "", ClassTransient},

		// load
		{OpLoad, 200, "OK", "", "", ClassOK},
		{OpLoad, 200, "Success", "OK", "", ClassOK},
		{OpLoad, 200, "Publish Timeout", "", "", ClassOK},
		{OpLoad, 200, "TXN_IN_PROCESSING", "Transaction is in processing", "", ClassRetrySafe},
		{OpLoad, 200, "TXN_IN_PROCESSING", "Transaction in processing, please retry later", "", ClassRetrySafe},
		{OpLoad, 200, "ABORTED", "The load is timeout, and will be aborted", "", ClassTransient},
		{OpLoad, 200, "ABORTED", "current transaction is aborted", "", ClassTransient},
		{OpLoad, 200, "TXN_NOT_EXISTS", "Transaction with label p-db-1 not exists", "", ClassTransient},
		{OpLoad, 200, "INTERNAL_ERROR", "body size 20000000 exceed limit 10000000", "", ClassTransient},
		{OpLoad, 200, "MEM_LIMIT_EXCEEDED", "memory limit exceeded", "", ClassTransient},
		{OpLoad, 200, "FAILED", cls + "stream load task p-db-1 does not exist", "", ClassTransient},
		{OpLoad, 200, "FAILED", cls + "stream load task p-db-1 has already been cancelled: LOAD exception: Failed to find table nope in db d", "", ClassTransient},
		{OpLoad, 200, "FAILED", cls + "stream load task p-db-1 is aborting: transaction timeout after 20000ms", "", ClassTransient},
		{OpLoad, 200, "FAILED", cls + "transaction timeout after 20000ms", "", ClassTransient},
		{OpLoad, 200, "FAILED", cls + "current running txns on db 10011 is 1000, larger than limit 1000", "", ClassTransient},
		{OpLoad, 200, "FAILED", cls + "Request database a not equal transaction database b", "", ClassPerTxn},
		{OpLoad, 200, "FAILED", cls + "LOAD exception: Failed to find table nope in db d", "", ClassPerTxn},
		{OpLoad, 200, "FAILED", "Unknown table 'nope'", "", ClassPerTxn},
		{OpLoad, 200, "Fail", "too many filtered rows", "", ClassPerTxn},
		{OpLoad, 200, "FAILED", "Only primary key table support partial update", "", ClassPerTxn},
		{OpLoad, 200, "FAILED", "primary key size exceed the limit.", "", ClassPerTxn},
		{OpLoad, 200, "INVALID_ARGUMENT", "load request not equal last.", "", ClassFatal},
		{OpLoad, 200, "INVALID_ARGUMENT", "Request table a not equal transaction table b", "", ClassFatal},
		{OpLoad, 200, "INVALID_ARGUMENT", "unknown data format, format=xml", "", ClassFatal},
		{OpLoad, 200, "INVALID_ARGUMENT", "Invalid strict mode format. Must be bool type", "", ClassFatal},
		{OpLoad, 200, "FAILED", "Access denied", "", ClassFatal},
		{OpLoad, 401, "", "", "", ClassFatal},
		{OpLoad, 403, "", "", "", ClassFatal},
		{OpLoad, 404, "", "", "", ClassFatal},
		{OpLoad, 429, "", "", "", ClassTransient},
		{OpLoad, 500, "", "", "", ClassTransient},
		{OpLoad, 0, "", "", "", ClassTransient},

		// prepare
		{OpPrepare, 200, "OK", "", "", ClassOK},
		{OpPrepare, 200, "FAILED", cls + "Unsupported operation: TXN_PREPARE", "", ClassFatal},
		{OpPrepare, 200, "TXN_NOT_EXISTS", "transaction with label p-db-1 not exists", "", ClassTransient},
		{OpPrepare, 200, "INTERNAL_ERROR", "transaction 9032 hasn't send any data yet", "", ClassTransient},
		{OpPrepare, 200, "INTERNAL_ERROR", "too many filtered rows", "", ClassPerTxn},
		{OpPrepare, 200, "TXN_IN_PROCESSING", "Transaction is in processing", "", ClassRetrySafe},

		// commit
		{OpCommit, 200, "OK", "", "", ClassOK},
		{OpCommit, 200, "OK", "Transaction 9032 has already committed, label is p-db-1", "", ClassOK},
		{OpCommit, 200, "OK", "Transaction has already committed, label is p-db-1", "", ClassOK},
		{OpCommit, 200, "FAILED", wrapStart + noRows + "}", "", ClassPerTxn},
		{OpCommit, 200, "FAILED", cls + noRows, "", ClassPerTxn},
		{OpCommit, 200, "FAILED", wrapStart + noParts + "}", "", ClassPerTxn},
		{OpCommit, 200, "FAILED", "all partitions have no load data", "", ClassPerTxn},
		{OpCommit, 200, "FAILED", wrapStart + "abnormal data more than max filter rate, tracking_url: http://be:8040/api/_load_error_log?file=x}", "", ClassPerTxn},
		{OpCommit, 200, "INTERNAL_ERROR", "too many filtered rows", "", ClassPerTxn},
		// Any coordinator failure in the §5.5 wrapper is the table's data:
		// the server aborted the transaction because of its rows.
		{OpCommit, 200, "FAILED", wrapStart + "primary key size exceed the limit.}", "", ClassPerTxn},
		{OpCommit, 200, "FAILED", wrapStart + "Value too long for column `order_status`}", "", ClassPerTxn},
		{OpCommit, 200, "FAILED", "Transaction 9032 is aborting (reason: abnormal data more than max filter rate, tracking_url: x), label is p-db-1", "", ClassPerTxn},
		{OpCommit, 200, "FAILED", "Can not commit CANCELLED transaction 9032, label is p-db-1", "", ClassAmbiguous},
		{OpCommit, 200, "FAILED", "Can not commit ABORTED transaction 9032, label is p-db-1", "", ClassAmbiguous},
		{OpCommit, 200, "FAILED", "Transaction 9032 is aborting (reason: transaction timeout after 20000ms), label is p-db-1", "", ClassAmbiguous},
		{OpCommit, 200, "FAILED", "Transaction 9032 is already committing, label is p-db-1", "", ClassAmbiguous},
		{OpCommit, 200, "FAILED", "No transaction found by label p-db-1", "", ClassAmbiguous},
		{OpCommit, 200, "FAILED", cls + "transaction p-db-1 has no backend", "", ClassAmbiguous},
		{OpCommit, 200, "TXN_NOT_EXISTS", "transaction with label p-db-1 not exists", "", ClassAmbiguous},
		{OpCommit, 200, "PUBLISH_TIMEOUT", "publish timeout", "", ClassAmbiguous},
		{OpCommit, 200, "INTERNAL_ERROR", "rpc failed", "", ClassAmbiguous},
		{OpCommit, 200, "TXN_IN_PROCESSING", "Transaction is in processing", "", ClassRetrySafe},
		{OpCommit, 200, "", "", "", ClassAmbiguous},
		{OpCommit, 0, "", "", "", ClassAmbiguous},
		{OpCommit, 502, "", "", "", ClassAmbiguous},
		{OpCommit, 404, "", "", "", ClassAmbiguous},
		{OpCommit, 401, "FAILED", "Access denied for user 'u'", "", ClassFatal},

		// rollback: best effort, every failure transient
		{OpRollback, 200, "OK", "stream load p-db-1 abort", "", ClassOK},
		{OpRollback, 200, "OK", "Transaction 9032 has already aborted, label is p-db-1", "", ClassOK},
		{OpRollback, 200, "OK", "Transaction 9032 abort is already in progress, label is p-db-1. Background retry will continue.", "", ClassOK},
		{OpRollback, 200, "Success", "", "", ClassOK},
		{OpRollback, 200, "FAILED", "Can not abort transaction 9032 during committing, label is p-db-1", "", ClassTransient},
		{OpRollback, 200, "FAILED", "Can not abort VISIBLE transaction 9032, label is p-db-1", "", ClassTransient},
		{OpRollback, 200, "FAILED", cls + "stream load taskp-db-1does not exist", "", ClassTransient},
		{OpRollback, 200, "TXN_NOT_EXISTS", "transaction with label p-db-1 not exists", "", ClassTransient},
		{OpRollback, 200, "TXN_IN_PROCESSING", "Transaction is in processing", "", ClassTransient},
		{OpRollback, 200, "FAILED", "too many filtered rows", "", ClassTransient},
		{OpRollback, 0, "", "", "", ClassTransient},
		{OpRollback, 500, "", "", "", ClassTransient},
		{OpRollback, 401, "", "", "", ClassFatal},

		// get_load_state and cancel
		{OpLoadState, 200, "OK", "OK", "", ClassOK},
		{OpLoadState, 200, "FAILED", "unknown database, database=nodb", "", ClassTransient},
		{OpLoadState, 200, "FAILED", "No label selected.", "", ClassTransient},
		{OpLoadState, 0, "", "", "", ClassTransient},
		{OpLoadState, 401, "", "", "", ClassFatal},
		{OpCancel, 200, "OK", "OK", "", ClassOK},
		{OpCancel, 200, "FAILED", "transaction not found", "", ClassTransient},

		// plain stream load
		{OpStreamLoad, 200, "Success", "OK", "", ClassOK},
		{OpStreamLoad, 200, "Publish Timeout", "", "", ClassOK},
		{OpStreamLoad, 200, "Label Already Exists", "Label [x] has already been used.", "FINISHED", ClassOK},
		{OpStreamLoad, 200, "Label Already Exists", "Label [x] has already been used.", "RUNNING", ClassAmbiguous},
		{OpStreamLoad, 200, "Fail", "too many filtered rows", "", ClassPerTxn},
		{OpStreamLoad, 200, "Fail", "something broke", "", ClassTransient},
		{OpStreamLoad, 0, "", "", "", ClassAmbiguous},

		// an operation the client does not know
		{"explode", 200, "OK", "", "", ClassFatal},
	}
	for _, tc := range cases {
		name := fmt.Sprintf("%s/%d/%s/%.60s/%s", tc.op, tc.code, tc.status, tc.message, tc.existing)
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, Classify(tc.op, tc.code, tc.status, tc.message, tc.existing))
		})
	}
}

// Status matching ignores case (the FE matches transaction_type and ops
// case-insensitively; replies are parsed the same way).
func TestClassifyStatusCaseInsensitive(t *testing.T) {
	assert.Equal(t, ClassOK, Classify(OpCommit, 200, "ok", "", ""))
	assert.Equal(t, ClassRetrySafe, Classify(OpLoad, 200, "txn_in_processing", "", ""))
	assert.Equal(t, ClassOK, Classify(OpStreamLoad, 200, "label already exists", "", "finished"))
}

func TestClassString(t *testing.T) {
	for c, s := range map[Class]string{
		ClassOK: "ok", ClassRetrySafe: "retry_safe", ClassAmbiguous: "ambiguous", ClassTransient: "transient",
		ClassPerTxn: "per_transaction", ClassFatal: "fatal", Class(42): "class(42)",
	} {
		assert.Equal(t, s, c.String())
	}
}
