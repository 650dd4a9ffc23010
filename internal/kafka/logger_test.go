package kafka

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kgo"
)

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

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
