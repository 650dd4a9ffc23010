package starrocks_txn

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// errorLines are the lines of a logfmt log at level error.
func errorLines(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "level=ERROR") {
			out = append(out, line)
		}
	}
	return out
}

// loggedStream starts a stream into the emulator whose log (every level) goes
// to buf, and returns its producer.
func loggedStream(t *testing.T, buf *logBuffer, outputYAML string) func(context.Context, service.MessageBatch) error {
	t.Helper()
	sb := service.GlobalEnvironment().Clone().NewStreamBuilder()
	sb.SetLogger(slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	produce, err := sb.AddBatchProducerFunc()
	require.NoError(t, err)
	require.NoError(t, sb.AddOutputYAML(outputYAML))
	stream, err := sb.Build()
	require.NoError(t, err)
	go func() { _ = stream.Run(context.Background()) }()
	t.Cleanup(func() { _ = stream.StopWithin(2 * time.Second) })
	return produce
}

// One bad value in a cycle of several source transactions of one partition:
// the cycle is bisected down to the transaction, and the log has exactly one
// error line for it, the dead-letter (or stall) line, which names the
// transaction, the column and the value. The bisection steps are no alerts.
func TestOnePoisonedTransactionLogsOneErrorLine(t *testing.T) {
	for _, mode := range []string{"dead_letter", "stall"} {
		t.Run(mode, func(t *testing.T) {
			e := startEmulator(t)
			var logs logBuffer
			out := fmt.Sprintf("starrocks_txn:\n  schema_evolution: ignore\n  load_urls: [ %s ]\n  commit_interval: 300ms\n", e.FEURL())
			dlName := "dl-one-error-" + mode
			if mode == "dead_letter" {
				captures.Delete(dlName)
				t.Cleanup(func() { captures.Delete(dlName) })
				out += fmt.Sprintf("  dead_letter:\n    starrocks_txn_test_capture: { name: %s }\n", dlName)
			}
			produce := loggedStream(t, &logs, out)
			// Eight source transactions in one batch, so in one cycle; the
			// sixth carries a quantity StarRocks cannot take.
			s := newSrc("asm")
			var batch service.MessageBatch
			for i := 0; i < 8; i++ {
				id := fmt.Sprintf("txn-%d", i)
				var qty any = i + 1
				if i == 5 {
					id, qty = "txn-bad", "lots"
				}
				batch = append(batch,
					s.row("p0", id, "orders", map[string]any{"order_id": i, "customer_id": 1, "total_amount": 1}, false),
					s.row("p0", id, "order_items", map[string]any{"order_id": i, "item_id": 1, "quantity": qty}, true))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- produce(ctx, batch) }()
			if mode == "dead_letter" {
				require.NoError(t, <-done)
				d, _ := captures.Load(dlName)
				require.Equal(t, []string{"txn-bad"}, d.(*fakeDL).txnIDs())
			} else {
				waitLogged(t, &logs, 0, "the partition stalls", "The partition stalled at source transaction", "txn-bad")
			}
			rows, err := e.Store().Rows("test", "orders")
			require.NoError(t, err)
			if mode == "dead_letter" {
				assert.Len(t, rows, 7, "the other seven committed")
			} else {
				assert.Len(t, rows, 5, "the five before it committed")
			}
			text := logs.String()
			assert.Contains(t, text, "isolating", "the bisection is still logged, below error")
			lines := errorLines(text)
			require.Len(t, lines, 1, "exactly one error line for one poisoned transaction:\n%s", strings.Join(lines, "\n"))
			assert.Contains(t, lines[0], "txn-bad")
			assert.Contains(t, lines[0], "column quantity")
			assert.Contains(t, lines[0], "lots")
		})
	}
}
