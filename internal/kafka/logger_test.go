package kafka

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/testkit/testlog"
)

// syncBuffer is a goroutine-safe log sink.
type syncBuffer = testlog.Buffer

// fakeClock is a settable clock for the limiter.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestLogLimiter(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	l := NewLogLimiter(10 * time.Second)
	l.now = clk.now
	assert.True(t, l.Due("a"), "first time")
	assert.False(t, l.Due("a"), "repeat within the interval")
	assert.True(t, l.Due("b"), "keys are independent")
	clk.t = clk.t.Add(9 * time.Second)
	assert.False(t, l.Due("a"))
	clk.t = clk.t.Add(time.Second)
	assert.True(t, l.Due("a"), "due again after the interval")
}

func TestLoggerForwardsRateLimited(t *testing.T) {
	buf := &syncBuffer{}
	log := service.NewLoggerFromSlog(slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	lg := NewLogger(log, NewLogLimiter(time.Hour))
	assert.Equal(t, kgo.LogLevelWarn, lg.Level())
	lg.Log(kgo.LogLevelWarn, "unable to commit", "group", "g", "err", "boom")
	lg.Log(kgo.LogLevelWarn, "unable to commit", "group", "g", "err", "boom")
	lg.Log(kgo.LogLevelError, "fatal thing")
	out := buf.String()
	assert.Equal(t, 1, strings.Count(out, "kafka client: unable to commit group=g err=boom"), out)
	assert.Contains(t, out, "level=WARN")
	assert.Contains(t, out, "level=ERROR")
	assert.Contains(t, out, "kafka client: fatal thing")
}

// TestLogLimiterIsBounded feeds the limiter error texts that never repeat
// (offsets, addresses in the text), as a long run does: the keys it holds
// stay bounded, expired ones are forgotten, and rate limiting still works.
func TestLogLimiterIsBounded(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	l := NewLogLimiter(10 * time.Second)
	l.now = clk.now
	for i := range 100 * maxLogKeys {
		require.True(t, l.Due(fmt.Sprintf("fetch:cdc/0: offset %d out of range", i)), "a new error is never silenced")
		clk.t = clk.t.Add(time.Millisecond)
		if i%97 == 0 {
			require.False(t, l.Due(fmt.Sprintf("fetch:cdc/0: offset %d out of range", i)), "a repeat within the interval is")
		}
	}
	assert.LessOrEqual(t, l.Len(), 2*maxLogKeys)

	// A storm of distinct keys within one interval is capped too.
	for i := range 10 * maxLogKeys {
		require.True(t, l.Due(fmt.Sprintf("storm %d", i)))
	}
	assert.LessOrEqual(t, l.Len(), 2*maxLogKeys)

	// Once the interval passed, old keys are forgotten on the next call
	// (the generation before is dropped at the second turn-over).
	clk.t = clk.t.Add(11 * time.Second)
	require.True(t, l.Due("later"))
	clk.t = clk.t.Add(11 * time.Second)
	require.True(t, l.Due("later"))
	assert.LessOrEqual(t, l.Len(), 2, "only \"later\" is left, in the current and the previous generation")
	assert.False(t, l.Due("later"))
}
