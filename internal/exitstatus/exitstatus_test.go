package exitstatus

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
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
