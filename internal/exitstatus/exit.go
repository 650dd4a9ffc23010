package exitstatus

import (
	"fmt"
	"io"
	"os"
	"slices"
	"time"
)

// Grace is how long the binary gives a pipeline that stopped on a recorded
// failure to end by itself before it exits (ExitAfterFailure).
const Grace = time.Second

// ExitAfterFailure makes the process exit with status 1 at most Grace after
// a component records a failure, if it has not ended by then.
//
// A component records one only when it stops before it ever started (the
// starrocks_txn output's Connect): its output closes, which ends the stream,
// and Benthos then stops the stream gracefully, waiting for the input to
// close. An input whose message is held by the pipeline's processors
// (blocked on handing it to the closed output) is not closed before that
// message is acknowledged, which never happens, so the graceful stop waits
// three quarters of shutdown_timeout (15 s by default) before it stops the
// rest by force. Nothing in the process was written or acknowledged — the
// output never started — so there is nothing to wait for: the process exits.
// A pipeline with nothing held ends by itself within the grace, through the
// usual path.
//
// In Benthos's streams mode (args name the streams command) one stream that
// stops does not end the process, so nothing is armed.
func ExitAfterFailure(args []string) {
	if slices.Contains(args, "streams") {
		return
	}
	go watch(Recorded(), Grace, os.Stderr, os.Exit)
}

// watch waits for recorded to close, then grace, then writes why to w and
// calls exit(1).
func watch(recorded <-chan struct{}, grace time.Duration, w io.Writer, exit func(int)) {
	<-recorded
	time.Sleep(grace)
	msg := "the pipeline stopped before it started"
	if err := failure(); err != nil {
		msg = err.Error()
	}
	fmt.Fprintf(w, "exiting with status 1 without waiting for the input to drain (nothing was written or acknowledged): %s\n", msg)
	exit(1)
}
