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

// Every message the assembler emits holds a stamp until its commit: its
// flags stay together, after the words.
func TestStampHasNoPadding(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(stamp{}), uintptr(80))
}
