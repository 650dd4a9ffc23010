package starrocks

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIsDeleteRow(t *testing.T) {
	for body, want := range map[string]bool{
		`{"id":1,"__op":1}`:            true,
		`{"id":1,"__op":"1"}`:          true,
		`{"__op": 1 ,"id":1}`:          true,
		`{"id":1,"__op":0}`:            false,
		`{"id":1}`:                     false,
		`{"id":1,"note":"\"__op\":1"}`: false,
		`{"id":1,"__op":1`:             false,
		`{"id":1,"__op":null}`:         false,
	} {
		assert.Equal(t, want, IsDeleteRow([]byte(body)), body)
	}
}
