// Package shutdown tells plugins that the process was asked to stop
// (SIGINT, SIGTERM) before Benthos tells them. Benthos stops a stream in
// layer order and signals an output only once its input and pipeline have
// closed; an output still waiting to connect for the first time never sees
// that, and the stop waits out three quarters of shutdown_timeout. An output
// that has written nothing yet can give up at once instead.
package shutdown

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

var (
	once sync.Once
	ch   = make(chan struct{})
)

// Trigger marks the process as stopping; later calls do nothing.
func Trigger() { once.Do(func() { close(ch) }) }

// Signalled is closed once the process is stopping.
func Signalled() <-chan struct{} { return ch }

// NotifyOnSignals triggers on the first SIGINT or SIGTERM. Benthos receives
// the signal too (signal.Notify delivers to every registered channel) and
// stops the stream as usual.
func NotifyOnSignals() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-c
		Trigger()
	}()
}
