package kafka_txn

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/starrocks-txn/benthos-starrocks/internal/exitstatus"
)

// httpLike is a TCP server that answers whatever it reads as an HTTP server
// refusing a malformed request: the wrong port in seed_brokers.
func httpLike(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				buf := make([]byte, 512)
				if _, err := conn.Read(buf); err == nil {
					_, _ = conn.Write([]byte("HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n"))
				}
				_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
				_, _ = io.Copy(io.Discard, conn)
			}()
		}
	}()
	return l.Addr().String()
}

// Errors at start that no retry fixes — a refused login, an address that is
// no Kafka broker — stop the input, and the pipeline with it, at once, with
// a log line naming what to fix, and make the binary exit with status 1;
// before, Benthos retried Connect for ever. Connect is not tried again.
func TestDefiniteStartErrorsStopThePipeline(t *testing.T) {
	sasl := newCluster(t, 1, kfake.EnableSASL(), kfake.Superuser("PLAIN", "admin", "s3cret"))
	for name, c := range map[string]struct{ conf, want string }{
		"a refused login": {strings.ReplaceAll(testYAML(sasl, "g-sasl", "sasl:\n  - mechanism: PLAIN\n    username: admin\n    password: wrong-pw\n"), "\n", "\n    "),
			"closed the connection during the sasl handshake: authentication with sasl mechanism PLAIN as user"},
		"no Kafka broker at the address": {strings.ReplaceAll(`
seed_brokers: [ "`+httpLike(t)+`" ]
topics: [ cdc ]
consumer_group: g-http`, "\n", "\n    "),
			"answered as an HTTP server, not a Kafka broker: check the port"},
	} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, exitstatus.Take())
			logs := &syncBuffer{}
			sb := service.NewStreamBuilder()
			sb.SetLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
			require.NoError(t, sb.SetYAML("input:\n  kafka_txn:"+c.conf+"\noutput:\n  drop: {}\n"))
			stream, err := sb.Build()
			require.NoError(t, err)
			done := make(chan error, 1)
			go func() { done <- stream.Run(context.Background()) }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				_ = stream.StopWithin(time.Second)
				t.Fatalf("the stream did not stop; logs:\n%s", logs.String())
			}
			assert.Contains(t, logs.String(), "The kafka_txn input stops, and the pipeline with it: ")
			assert.Contains(t, logs.String(), c.want)
			assert.Equal(t, 1, strings.Count(logs.String(), c.want), "Connect is not retried")
			assert.NotContains(t, logs.String(), "wrong-pw")
			assert.Error(t, exitstatus.Take(), "the binary exits with status 1")
		})
	}
}
