package prometheus_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/metrics/prometheus"

	"github.com/starrocks-txn/benthos-starrocks/testkit/testlog"
)

// syncBuffer is a log sink safe for the push loop's goroutine.
type syncBuffer = testlog.Buffer

// A push_url with credentials in it (http://user:secret@host) still
// authenticates the pushes, but neither the user nor the password appears
// in a log line or in Close's error, whether the Pushgateway refuses the
// push (the push client quotes the URL in its error) or cannot be reached
// (net/http quotes it with the user name).
func TestPushURLCredentialsAreNeverLogged(t *testing.T) {
	var (
		mu    sync.Mutex
		auths []string
	)
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, "full", http.StatusInternalServerError)
	}))
	defer failing.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	goneAddr := gone.Listener.Addr().String()
	gone.Close()

	for name, host := range map[string]string{
		"refused by the pushgateway": strings.TrimPrefix(failing.URL, "http://"),
		"unreachable":                goneAddr,
	} {
		t.Run(name, func(t *testing.T) {
			var logs syncBuffer
			log := service.NewLoggerFromSlog(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
			url := "http://pushuser:s3cret@" + host
			e, err := prometheus.New(mustParse(t, fmt.Sprintf(`{push_url: %q, push_interval: 20ms}`, url)), log)
			require.NoError(t, err)
			require.Eventually(t, func() bool { return strings.Contains(logs.String(), "Pushing metrics to") },
				5*time.Second, 10*time.Millisecond, "the failing push is logged")
			closeErr := e.Close(context.Background())
			require.Error(t, closeErr)

			for what, text := range map[string]string{"the log": logs.String(), "Close's error": closeErr.Error()} {
				assert.NotContains(t, text, "s3cret", what)
				assert.NotContains(t, text, "pushuser", what)
				assert.Contains(t, text, host, "%s still names the Pushgateway", what)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, auths)
	assert.Equal(t, "Basic cHVzaHVzZXI6czNjcmV0", auths[0], "the URL's credentials authenticate the push")
}
