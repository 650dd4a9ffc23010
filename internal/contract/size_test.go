package contract

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// The output keeps a Meta per message in flight: its flags stay together,
// after the words, so that no padding sits between them.
func TestMetaHasNoPadding(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(Meta{}), uintptr(112))
}
