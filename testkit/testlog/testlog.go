// Package testlog holds what tests of several packages use to read the log
// lines a component wrote.
package testlog

import (
	"bytes"
	"sync"
)

// Buffer is a log sink that is safe for concurrent writes (franz-go's and
// the component's goroutines) and reads (the test).
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write implements io.Writer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Len is how many bytes were written so far.
func (b *Buffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

// From is what was written after the first off bytes.
func (b *Buffer) From(off int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf.Bytes()[min(off, b.buf.Len()):])
}
