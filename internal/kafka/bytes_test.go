package kafka

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseByteSize(t *testing.T) {
	for in, want := range map[string]int32{"1048576": 1 << 20, "512KiB": 512 << 10, "1MiB": 1 << 20, "2MB": 2000000, "1GiB": 1 << 30, " 7 B ": 7} {
		got, err := ParseByteSize(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "lots", "0", "-1MB", "1.5MB", "2GiB", "9999999999999GB", "1073741825"} {
		_, err := ParseByteSize(in)
		assert.Error(t, err, in)
	}
}

func TestParseByteSizeMax(t *testing.T) {
	got, err := ParseByteSizeMax("256MiB", 1<<50)
	require.NoError(t, err)
	assert.Equal(t, int64(256<<20), got)
	got, err = ParseByteSizeMax("4GiB", 1<<50)
	require.NoError(t, err)
	assert.Equal(t, int64(4<<30), got)
	_, err = ParseByteSizeMax("2GiB", 1<<30)
	assert.EqualError(t, err, `"2GiB" is above the 1GiB maximum`)
	_, err = ParseByteSizeMax("2000000GiB", 1<<50)
	assert.EqualError(t, err, `"2000000GiB" is above the 1048576GiB maximum`)
	_, err = ParseByteSizeMax("0", 1<<50)
	assert.Error(t, err)
}
