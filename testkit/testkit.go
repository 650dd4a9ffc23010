// Package testkit is the project's test kit: what the tests of several
// packages, and the demo and bench commands, share to build a world. It sits
// above the plugins and the emulator and below the commands (ARCHITECTURE.md
// §2): no plugin, internal package or the emulator imports it outside its
// tests (layers_test.go).
//
//   - testkit/kafka: THE in-process Kafka (kfake with the read_committed
//     fetch guard always on);
//   - testkit/emurig: starting the StarRocks emulator in a test;
//   - testkit/workload: the CDC traffic generators, the model of what the
//     source committed, and the one comparison of a target with it;
//   - testkit/testlog: a goroutine-safe log sink;
//   - this package: WaitFor, the poll that orders a test's events, and
//     FreeAddr, a loopback port no other test of the binary was given.
package testkit

import (
	"fmt"
	"testing"
	"time"
)

// pollInterval is the shortest pause between two evaluations of a
// condition; a condition that takes longer to evaluate (a query of the
// target) waits as long as it took, so that polling never takes more than
// half of the machine's time the test gets.
const pollInterval = 20 * time.Millisecond

// WaitFor evaluates cond until it holds (every 20 ms, or as long as cond
// takes to evaluate), and fails t (at once, FailNow) when it still does not
// after within, saying what was awaited: format and args, like t.Errorf's.
func WaitFor(t testing.TB, within time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	if !Poll(within, cond) {
		t.Fatalf("timed out after %v waiting for: %s", within, fmt.Sprintf(format, args...))
	}
}

// Poll evaluates cond like WaitFor until it holds or within has passed, and
// reports whether it held: for a test that decides what to do, or what to
// report, when the condition does not come.
func Poll(within time.Duration, cond func() bool) bool {
	return poll(wallClock, within, cond)
}

// clock is what poll measures and waits on: the wall clock, or the explicit
// one of Poll's own test.
type clock struct {
	now   func() time.Time
	sleep func(time.Duration)
}

var wallClock = clock{now: time.Now, sleep: time.Sleep}

func poll(c clock, within time.Duration, cond func() bool) bool {
	deadline := c.now().Add(within)
	for {
		start := c.now()
		if cond() {
			return true
		}
		if c.now().After(deadline) {
			return false
		}
		c.sleep(max(pollInterval, c.now().Sub(start)))
	}
}
