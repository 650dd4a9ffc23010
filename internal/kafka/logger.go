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

// maxLogKeys bounds the keys a LogLimiter remembers per generation (twice
// that in all). Keys are error texts, which can carry offsets, addresses or
// partition lists, so a long run can see an unbounded number of them.
const maxLogKeys = 1024

// LogLimiter rate-limits log lines by key: a key is due the first time and
// then at most once per interval. Safe for concurrent use; it takes its own
// lock, so it can be called from franz-go's logger while the caller holds a
// lock of its own.
//
// Keys live in two generations: the current one and the one before. Once an
// interval has passed since the current generation began, it becomes the
// previous one and the previous one is dropped — every key in it was let
// through an interval ago or more, so it would be due anyway. A generation
// that fills up with maxLogKeys keys is turned over early, so memory stays
// bounded even when more distinct lines than that arrive within one
// interval; such a line may then repeat sooner than the interval, and no new
// line is ever silenced.
type LogLimiter struct {
	interval time.Duration
	now      func() time.Time

	mu       sync.Mutex
	cur      map[string]time.Time
	prev     map[string]time.Time
	curStart time.Time
}

// NewLogLimiter returns a limiter that lets a key through once per interval.
func NewLogLimiter(interval time.Duration) *LogLimiter {
	return &LogLimiter{interval: interval, now: time.Now, cur: map[string]time.Time{}, prev: map[string]time.Time{}}
}

// Due reports whether a line with this key should be logged now, and if so
// records that it was.
func (l *LogLimiter) Due(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if now.Sub(l.curStart) >= l.interval {
		l.turnOverLocked(now)
	}
	last, seen := l.cur[key]
	if !seen {
		last, seen = l.prev[key]
	}
	if seen && now.Sub(last) < l.interval {
		return false
	}
	if len(l.cur) >= maxLogKeys {
		l.turnOverLocked(now)
	}
	l.cur[key] = now
	return true
}

// turnOverLocked starts a new generation.
func (l *LogLimiter) turnOverLocked(now time.Time) {
	l.prev, l.cur, l.curStart = l.cur, make(map[string]time.Time, len(l.cur)), now
}

// Len is how many keys the limiter holds (at most twice maxLogKeys).
func (l *LogLimiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.cur) + len(l.prev)
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
