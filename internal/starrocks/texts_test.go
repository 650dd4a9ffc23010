package starrocks

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The texts are the replies docs/notes/starrocks-protocol.md quotes (the §
// below are its sections), wrapped as the client returns them.
func replyErr(op string, class Class, status, msg string) error {
	return &Error{Op: op, DB: "shop", Label: "benthos-shop-0123456789abcdef", Class: class, HTTPCode: 200, Status: status, Message: msg}
}

func TestIsTableWide(t *testing.T) {
	const cls = "class com.starrocks.common.StarRocksException: "
	for _, tc := range []struct {
		err  error
		want bool
	}{
		// §5.4 step 4: the first load of a table that does not exist.
		{replyErr(OpLoad, ClassPerTxn, "FAILED", cls+"LOAD exception: Failed to find table nope in db shop"), true},
		{replyErr(OpLoad, ClassPerTxn, "FAILED", "Unknown table 'nope'"), true},
		// §5.3, §6.1: the database is gone.
		{replyErr(OpBegin, ClassPerTxn, "FAILED", cls+"Database[nodb] does not exist"), true},
		{replyErr(OpLoadState, ClassTransient, "FAILED", "unknown database, database=nodb"), true},
		// A partial update on a table without a primary key.
		{replyErr(OpLoad, ClassPerTxn, "FAILED", "Only primary key table support partial update"), true},
		// Caused by some rows: the table is fine for other transactions.
		{replyErr(OpLoad, ClassPerTxn, "FAILED", "primary key size exceed the limit."), false},
		{replyErr(OpLoad, ClassPerTxn, "Fail", "too many filtered rows"), false},
		{replyErr(OpCommit, ClassPerTxn, "FAILED", "STREAM_LOAD_TASK:10042, label{p-db-1}, error_msg{cancel stream task for exception: abnormal data more than max filter rate, tracking_url: http://be:8040/api/_load_error_log?file=x}"), false},
		{replyErr(OpCommit, ClassPerTxn, "FAILED", "No rows were imported from upstream. Possible causes: 1) all rows were filtered by load conditions"), false},
		// §5.4 step 1: the transaction is gone (transient). It matches, as
		// the doc comment says.
		{replyErr(OpLoad, ClassTransient, "FAILED", cls+"stream load task benthos-shop-0123456789abcdef does not exist"), true},
		// Wrapped by a caller, and no error at all.
		{fmt.Errorf("loading the progress table: %w", replyErr(OpLoad, ClassPerTxn, "FAILED", "Failed to find table p in db shop")), true},
		{nil, false},
	} {
		assert.Equal(t, tc.want, IsTableWide(tc.err), "%v", tc.err)
	}
}

func TestRollbackRefusalOf(t *testing.T) {
	const label = "benthos-shop-0123456789abcdef"
	for _, tc := range []struct {
		msg  string
		want RollbackRefusal
	}{
		// §5.6, multi-table rollback.
		{"Can not abort VISIBLE transaction 9032, label is " + label, RefusalFinished},
		{"Can not abort transaction 9032 during committing, label is " + label, RefusalCommitting},
		{"stream load task" + label + "does not exist", RefusalNotFound},
		// §4.4, the classic FE path: the status is named, and an evicted
		// label answers from the cached outcome.
		{"Can not abort COMMITTED transaction 9032, label is " + label, RefusalFinished},
		{"Can not abort FINISHED transaction 9032, label is " + label, RefusalFinished},
		{"No transaction found by label " + label, RefusalNotFound},
		{"Transaction with label " + label + " not exists", RefusalNotFound},
		// §5.4 step 3, §5.5: a task that is committing or committed.
		{"stream load task " + label + " has already been commited", RefusalFinished},
		{"Transaction 9032 has already committed, label is " + label, RefusalFinished},
		{"stream load task " + label + " is committing, can not accept new loads", RefusalCommitting},
		{"Transaction 9032 is already committing, label is " + label, RefusalCommitting},
		// Nothing known.
		{"something else", RefusalUnexplained},
		{"Can not commit CANCELLED transaction 9032, label is " + label, RefusalUnexplained},
	} {
		err := replyErr(OpRollback, ClassTransient, "FAILED", tc.msg)
		assert.Equal(t, tc.want, RollbackRefusalOf(err), tc.msg)
	}
	assert.Equal(t, RefusalUnexplained, RollbackRefusalOf(nil))
	assert.Equal(t, RefusalNotFound, RollbackRefusalOf(errors.New("rollback: no transaction found")), "any error's text counts")
	for r, s := range map[RollbackRefusal]string{RefusalUnexplained: "unexplained", RefusalFinished: "finished", RefusalCommitting: "committing", RefusalNotFound: "not_found"} {
		assert.Equal(t, s, r.String())
	}
}

func TestIsUnknownDatabase(t *testing.T) {
	const cls = "class com.starrocks.common.StarRocksException: "
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{replyErr(OpLoadState, ClassTransient, "FAILED", "unknown database, database=nodb"), true},
		{replyErr(OpBegin, ClassPerTxn, "FAILED", cls+"Database[nodb] does not exist"), true},
		{replyErr(OpLoadState, ClassTransient, "FAILED", "No database selected."), false},
		{replyErr(OpRollback, ClassPerTxn, "FAILED", "stream load taskLdoes not exist"), false},
		{replyErr(OpLoadState, ClassTransient, "", "connection refused"), false},
		{nil, false},
	} {
		assert.Equal(t, tc.want, IsUnknownDatabase(tc.err), "%v", tc.err)
	}
}
