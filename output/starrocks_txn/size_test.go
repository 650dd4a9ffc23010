package starrocks_txn

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// An item is kept per message in flight (docs/benchmark.md, "Memory in
// flight"): its flags stay together and its time is one word.
func TestItemStaysCompact(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(item{}), uintptr(272))
}
