package starrocks

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// fuzzOps are the operations the fuzzer picks from; the last is one the
// client does not know.
var fuzzOps = []string{OpBegin, OpLoad, OpPrepare, OpCommit, OpRollback, OpLoadState, OpCancel, OpStreamLoad, "explode"}

// documentedSuccess is the success table of doc.go, written out again
// independently of classRules: the only outcomes Classify may call OK.
func documentedSuccess(op string, code int, status, existing string) bool {
	if code < 200 || code > 299 {
		return false
	}
	is := func(s string) bool { return strings.EqualFold(status, s) }
	switch op {
	case OpBegin, OpPrepare, OpCommit, OpCancel, OpLoadState:
		return is("OK")
	case OpRollback:
		return is("OK") || is("Success")
	case OpLoad:
		return is("OK") || is("Success") || is("Publish Timeout")
	case OpStreamLoad:
		return is("OK") || is("Success") || is("Publish Timeout") ||
			(is("Label Already Exists") && strings.EqualFold(existing, "FINISHED"))
	}
	return false
}

// checkClass holds one classification to the properties every caller relies
// on: a class is always one of the six, OK exactly for the documented
// success rows, authentication failures fatal, a commit never transient
// (replaying a commit of unknown outcome could double its rows) and
// ambiguous when there was no reply or a 5xx (unless the FE said "Access
// denied": it refused before acting), and a rollback, cancel or label-state
// query only ever OK, transient or fatal.
func checkClass(t *testing.T, op string, code int, status, message, existing string, got Class) {
	t.Helper()
	require.GreaterOrEqual(t, got, ClassOK)
	require.LessOrEqual(t, got, ClassFatal)
	known := false
	for _, o := range fuzzOps[:len(fuzzOps)-1] {
		known = known || o == op
	}
	if !known {
		require.Equal(t, ClassFatal, got, "an unknown operation")
		return
	}
	require.Equal(t, documentedSuccess(op, code, status, existing), got == ClassOK,
		"%s HTTP %d status %q existing %q: %s", op, code, status, existing, got)
	if code == 401 || code == 403 {
		require.Equal(t, ClassFatal, got)
	}
	switch op {
	case OpCommit:
		require.NotEqual(t, ClassTransient, got, "a commit is never replayed blindly")
		if code == 0 || (code >= 500 && code < 600) {
			// "Access denied" is the FE refusing before it acted (the
			// table's order: authentication first), whatever the code.
			want := ClassAmbiguous
			if strings.Contains(strings.ToLower(message), "access denied") {
				want = ClassFatal
			}
			require.Equal(t, want, got, "a commit without a reply, or with a 5xx")
		}
	case OpRollback, OpCancel, OpLoadState:
		require.Contains(t, []Class{ClassOK, ClassTransient, ClassFatal}, got)
	}
}

// FuzzClassify feeds arbitrary operations, HTTP codes, statuses, messages,
// ExistingJobStatus values and reply bodies to Classify and to the reply
// path of the client (parseReply, Reply's accessors, Client.result): none
// panics, a class is always returned and holds the properties of
// checkClass, the reply parser is deterministic and reads back what a
// well-formed reply says, and every failure is an *Error of that class.
// The seed corpus (testdata/fuzz/FuzzClassify) runs with every go test.
func FuzzClassify(f *testing.F) {
	f.Fuzz(func(t *testing.T, opIdx uint8, code int, status, message, existing string, body []byte) {
		op := fuzzOps[int(opIdx)%len(fuzzOps)]
		checkClass(t, op, code, status, message, existing, Classify(op, code, status, message, existing))

		// A well-formed reply carrying those fields classifies as they do.
		if utf8.ValidString(status) && utf8.ValidString(message) && utf8.ValidString(existing) {
			raw, err := json.Marshal(map[string]string{"Status": status, "Message": message, "ExistingJobStatus": existing})
			require.NoError(t, err)
			rep, perr := parseReply(code, raw)
			require.NoError(t, perr)
			require.Equal(t, status, rep.Status())
			require.Equal(t, message, rep.Message())
			require.Equal(t, existing, rep.Get("existingjobstatus"))
			checkResult(t, op, code, rep, nil)
		}

		// Any body.
		rep, perr := parseReply(code, body)
		again, perr2 := parseReply(code, body)
		require.Equal(t, perr == nil, perr2 == nil)
		require.Equal(t, rep.Fields, again.Fields, "parsing is deterministic")
		var m map[string]any
		if json.Unmarshal(body, &m) == nil && m != nil {
			require.NoError(t, perr, "a JSON object is a reply")
		}
		if perr != nil {
			require.Nil(t, rep.Fields)
			require.LessOrEqual(t, len(perr.Error()), errorBodyPrefix*6+200, "the error quotes a bounded prefix of the body")
		} else {
			for k := range rep.Fields {
				require.Equal(t, strings.ToLower(k), k)
				_ = rep.Get(strings.ToUpper(k))
			}
		}
		_ = rep.Status()
		_ = rep.Message()
		checkResult(t, op, code, rep, perr)
	})
}

// checkResult runs the client's own decision over one reply.
func checkResult(t *testing.T, op string, code int, rep *Reply, perr error) {
	t.Helper()
	rep.parseErr = perr
	k := &call{op: op, db: "db", table: "t", label: "l"}
	got, err := (&Client{}).result(k, rep, nil)
	require.Same(t, rep, got)
	want := Classify(op, code, rep.Status(), rep.Message(), rep.Get("ExistingJobStatus"))
	if perr != nil {
		want = Classify(op, code, "", "", "")
	}
	if perr == nil && want == ClassOK {
		require.NoError(t, err)
		return
	}
	require.Error(t, err)
	var e *Error
	require.True(t, errors.As(err, &e))
	require.Equal(t, want, e.Class)
	require.NotEqual(t, ClassOK, e.Class, "a failure is never OK")
	require.NotEmpty(t, e.Error())
	if perr != nil {
		require.ErrorIs(t, err, perr)
	}
}

// Found by FuzzClassify: a reply with keys that differ only in case and
// both non-empty ("Status":"OK","status":"FAILED") was read in map order,
// so the same body was a success one time and a failure the next.
func TestReplyKeysDifferingInCaseAreReadTheSameEveryTime(t *testing.T) {
	for range 64 {
		rep, err := parseReply(200, []byte(`{"status":"FAILED","Status":"OK","message":"boom","Message":""}`))
		require.NoError(t, err)
		require.Equal(t, "OK", rep.Status(), "the spelling that sorts first wins")
		require.Equal(t, "boom", rep.Message(), "a non-empty value wins over an empty one")
	}
}
