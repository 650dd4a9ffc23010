package starrocks

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRejectionTexts(t *testing.T) {
	// The multi-table wrapper of §5.5, with the emulator's error-log URL.
	wrapped := errors.New(`starrocks commit (db test, label l): per_transaction: status FAILED (HTTP 200): STREAM_LOAD_TASK:12, label{l}, error_msg{cancel stream task for exception: abnormal data more than max filter rate, tracking_url: http://127.0.0.1:8040/api/_load_error_log?file=error_log_l_3_12}`)
	assert.Equal(t, "http://127.0.0.1:8040/api/_load_error_log?file=error_log_l_3_12", TrackingURL(wrapped))
	assert.Empty(t, TrackingURL(errors.New("No rows were imported from upstream")))
	assert.Empty(t, TrackingURL(nil))

	// Newer builds name the table [T test_multi_table_all_rows_rejected_tracking].
	assert.Equal(t, "order_items", RejectedTable(errors.New("Failed to load table order_items: too many filtered rows, tracking_url: http://be:8040/api/_load_error_log?file=x")))
	assert.Empty(t, RejectedTable(wrapped))

	for line, col := range map[string]string{
		`Error: Value "abc" of column 'quantity' fails to convert to INT and the column is NOT NULL. Row: {"quantity":"abc"}`: "quantity",
		`Error: NULL value in non-nullable column 'order_id'. Row: {}`:                                                        "order_id",
		`Error: Value count does not match column count. Expect 3, but got 2`:                                                 "",
		`Reason: value 'x' out of range. Column: price, row: [1, x]`:                                                          "price",
	} {
		assert.Equal(t, col, ErrorLogColumn(line), line)
	}
}

func TestErrorLog(t *testing.T) {
	var authSeen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		authSeen = append(authSeen, r.Header.Get("Authorization"))
		if r.URL.Query().Get("file") == "missing" {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		fmt.Fprint(w, "Error: first\n\nError: second "+strings.Repeat("x", 600)+"\nError: third\nError: fourth\n")
	}))
	defer srv.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		authSeen = append(authSeen, r.Header.Get("Authorization"))
		fmt.Fprint(w, "Error: on a BE\n")
	}))
	defer other.Close()
	c := newClient(t, Config{LoadURLs: []string{srv.URL}, Username: "root", Password: "secret", RequestTimeout: 5 * time.Second})
	ctx := context.Background()

	lines, err := c.ErrorLog(ctx, srv.URL+"/api/_load_error_log?file=f", 3)
	require.NoError(t, err)
	require.Len(t, lines, 3, "the first lines, empty ones skipped")
	assert.Equal(t, "Error: first", lines[0])
	assert.LessOrEqual(t, len(lines[1]), errorLogLineBytes+len("…"), "a long line is cut")
	assert.NotEmpty(t, authSeen[0], "credentials go to a host of the load URLs")

	lines, err = c.ErrorLog(ctx, other.URL+"/api/_load_error_log?file=f", 3)
	require.NoError(t, err)
	assert.Equal(t, []string{"Error: on a BE"}, lines)
	assert.Empty(t, authSeen[1], "no credentials to another host")

	_, err = c.ErrorLog(ctx, srv.URL+"/api/_load_error_log?file=missing", 3)
	assert.ErrorContains(t, err, "HTTP 404")
	for _, bad := range []string{"file:///etc/passwd", "http://user:pw@" + strings.TrimPrefix(srv.URL, "http://") + "/x", "::"} {
		_, err = c.ErrorLog(ctx, bad, 3)
		assert.Error(t, err, bad)
		assert.NotContains(t, err.Error(), "pw", "no credentials in the error")
	}
	assert.Len(t, authSeen, 3, "refused URLs are never requested")
}
