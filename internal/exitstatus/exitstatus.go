// Package exitstatus lets a component that stops its pipeline on purpose —
// an error no retry can fix, or a give-up limit the user set — make the
// binary exit with a failure status. Benthos ends a stream whose output
// closed like any stream that finished (exit status 0), so the component
// records why here, and main turns the recorded failure into status 1.
//
// The record is process-wide: one binary runs one pipeline. Code that runs
// several streams in one process (tests) takes the record after each.
package exitstatus

import "sync"

var (
	mu     sync.Mutex
	failed error
	// recorded is closed by the Fail that records a failure; Take
	// replaces it once it was.
	recorded = make(chan struct{})
)

// Fail records err as the reason the pipeline stopped. The first one is
// kept until Take.
func Fail(err error) {
	if err == nil {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	if failed == nil {
		failed = err
		close(recorded)
	}
}

// Take returns the recorded failure, nil when there is none, and clears it.
func Take() error {
	mu.Lock()
	defer mu.Unlock()
	err := failed
	if failed != nil {
		recorded = make(chan struct{})
	}
	failed = nil
	return err
}

// Recorded is closed once a failure is recorded (until Take clears it: a
// later failure closes the channel Recorded returns then).
func Recorded() <-chan struct{} {
	mu.Lock()
	defer mu.Unlock()
	return recorded
}

// failure is the recorded failure, without clearing it.
func failure() error {
	mu.Lock()
	defer mu.Unlock()
	return failed
}
