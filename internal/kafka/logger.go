package kafka

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"
)

// LogInterval is how often a repeating log line (a fetch or commit error
// that every retry hits, a franz-go warning) is let through.
const LogInterval = 10 * time.Second

// LogLimiter rate-limits log lines by key: a key is due the first time and
// then at most once per interval. Safe for concurrent use; it takes its own
// lock, so it can be called from franz-go's logger while the caller holds a
// lock of its own.
type LogLimiter struct {
	interval time.Duration
	now      func() time.Time

	mu   sync.Mutex
	last map[string]time.Time
}

// NewLogLimiter returns a limiter that lets a key through once per interval.
func NewLogLimiter(interval time.Duration) *LogLimiter {
	return &LogLimiter{interval: interval, now: time.Now, last: map[string]time.Time{}}
}

// Due reports whether a line with this key should be logged now, and if so
// records that it was.
func (l *LogLimiter) Due(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if last, seen := l.last[key]; seen && now.Sub(last) < l.interval {
		return false
	}
	l.last[key] = now
	return true
}

// NewLogger returns a kgo.Logger that forwards franz-go's warnings and
// errors to log, prefixed "kafka client: "; an identical line is repeated at
// most once per the limiter's interval.
func NewLogger(log *service.Logger, lim *LogLimiter) kgo.Logger {
	return kgoLogger{log: log, lim: lim}
}

type kgoLogger struct {
	log *service.Logger
	lim *LogLimiter
}

func (l kgoLogger) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (l kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	var b strings.Builder
	b.WriteString("kafka client: ")
	b.WriteString(msg)
	for i := 0; i+1 < len(keyvals); i += 2 {
		fmt.Fprintf(&b, " %v=%v", keyvals[i], keyvals[i+1])
	}
	line := b.String()
	if !l.lim.Due("kgo:" + line) {
		return
	}
	switch level {
	case kgo.LogLevelError:
		l.log.Error(line)
	case kgo.LogLevelWarn:
		l.log.Warn(line)
	default:
		l.log.Debug(line)
	}
}
