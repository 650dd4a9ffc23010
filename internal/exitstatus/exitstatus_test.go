package exitstatus

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFirstFailureIsKeptUntilTaken(t *testing.T) {
	assert.NoError(t, Take())
	Fail(nil)
	assert.NoError(t, Take(), "nil is not a failure")
	first, second := errors.New("first"), errors.New("second")
	Fail(first)
	Fail(second)
	assert.Same(t, first, Take())
	assert.NoError(t, Take(), "taking clears it")
}

// Recorded is closed by the failure that is recorded, and a new channel
// waits for the next one once it was taken.
func TestRecordedClosesOnTheRecordedFailure(t *testing.T) {
	require.NoError(t, Take())
	first := Recorded()
	select {
	case <-first:
		t.Fatal("closed before any failure")
	default:
	}
	Fail(errors.New("boom"))
	Fail(errors.New("again"))
	<-first
	assert.Equal(t, first, Recorded(), "closed once, by the first")
	require.Error(t, Take())
	select {
	case <-Recorded():
		t.Fatal("the next failure's channel is closed before it")
	default:
	}
}

// The watch exits with status 1, saying why, a grace after the failure is
// recorded, and never without one.
func TestWatchExitsAGraceAfterTheFailure(t *testing.T) {
	require.NoError(t, Take())
	var out bytes.Buffer
	exited := make(chan int, 1)
	go watch(Recorded(), 50*time.Millisecond, &out, func(code int) { exited <- code })
	select {
	case code := <-exited:
		t.Fatalf("exited (%d) without a failure", code)
	case <-time.After(200 * time.Millisecond):
	}
	recordedAt := time.Now()
	Fail(errors.New("cannot start: user refused"))
	t.Cleanup(func() { _ = Take() })
	select {
	case code := <-exited:
		assert.Equal(t, 1, code)
		assert.GreaterOrEqual(t, time.Since(recordedAt), 50*time.Millisecond, "the pipeline gets its grace to end by itself")
	case <-time.After(10 * time.Second):
		t.Fatal("no exit after the failure")
	}
	assert.Contains(t, out.String(), "exiting with status 1")
	assert.Contains(t, out.String(), "cannot start: user refused")
}
