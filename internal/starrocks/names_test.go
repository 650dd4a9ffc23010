package starrocks

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidateName(t *testing.T) {
	cases := []struct {
		kind, name string
		ok         bool
		want       string // part of the error
	}{
		{"database", "shop", true, ""},
		{"table", "order_items", true, ""},
		{"table", "Orders-2024$v2", true, ""},
		{"table", "_t1", true, ""},
		{"database", strings.Repeat("d", 256), true, ""},
		{"database", strings.Repeat("d", 257), false, "at most 256"},
		{"table", strings.Repeat("t", 1024), true, ""},
		{"table", strings.Repeat("t", 1025), false, "at most 1024"},
		{"database", "", false, "invalid database name: it is empty"},
		{"table", "", false, "invalid table name: it is empty"},
		{"table", "orders\r\nX-Evil: 1", false, `control character '\r' at byte 6`},
		{"table", "orders\n", false, `control character '\n'`},
		{"table", "a\x00b", false, "control character"},
		{"table", "a\tb", false, "control character"},
		{"table", "a b", false, `character ' ' at byte 1 is not allowed`},
		{"table", "shop.orders", false, `character '.'`},
		{"table", "a/b", false, `character '/'`},
		{"table", "表", false, `character '表'`},
	}
	for _, tc := range cases {
		t.Run(tc.kind+"/"+truncateForError(tc.name), func(t *testing.T) {
			err := ValidateName(tc.kind, tc.name)
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), tc.kind)
			assert.NotContains(t, err.Error(), "\r", "the value is quoted, never raw")
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

func TestValidateLabel(t *testing.T) {
	for _, ok := range []string{"a", "p-shop-0123abcd", "_x_", strings.Repeat("l", 128), "550e8400-e29b-41d4-a716-446655440000"} {
		assert.NoError(t, ValidateLabel(ok), ok)
	}
	for bad, want := range map[string]string{
		"":                         "empty",
		strings.Repeat("l", 129):   "at most 128",
		"a b":                      "only letters, digits",
		"a.b":                      "only letters, digits",
		"l\r\n":                    "only letters, digits",
		"étiquette":                "only letters, digits",
		"shop$label":               "only letters, digits",
		strings.Repeat("é", 100):   "at most 128",
		"label/../../etc/passwd":   "only letters, digits",
		"label?x=1":                "only letters, digits",
		"label%0d%0aX-Evil:%20yes": "only letters, digits",
	} {
		err := ValidateLabel(bad)
		require.Error(t, err, "%q", bad)
		assert.Contains(t, err.Error(), want, "%q", bad)
	}
}

func TestNewLabel(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		l := NewLabel("bench", "shop")
		require.NoError(t, ValidateLabel(l))
		assert.Regexp(t, `^bench-shop-[0-9a-f]{16}$`, l)
		assert.False(t, seen[l], "labels are unique")
		seen[l] = true
	}
	assert.Regexp(t, `^shop-[0-9a-f]{16}$`, NewLabel("", "shop"))
	assert.Regexp(t, `^p_x-my_db_1-[0-9a-f]{16}$`, NewLabel("p.x", "my$db 1"))
	assert.Regexp(t, `^p-db-[0-9a-f]{16}$`, NewLabel("p", ""))

	for _, tc := range []struct{ prefix, db string }{
		{strings.Repeat("p", 200), "shop"},
		{"p", strings.Repeat("d", 256)},
		{strings.Repeat("p", 300), strings.Repeat("d", 300)},
	} {
		l := NewLabel(tc.prefix, tc.db)
		require.NoError(t, ValidateLabel(l), l)
		assert.Len(t, l, MaxLabelLen)
		assert.Regexp(t, `-[0-9a-f]{16}$`, l, "the random part is kept whole")
		assert.True(t, strings.HasPrefix(l, tc.prefix[:1]) || strings.HasPrefix(l, "_"))
	}
	// Non-ASCII runes become one '_' each.
	assert.Regexp(t, `^_{100}-shop-[0-9a-f]{16}$`, NewLabel(strings.Repeat("é", 100), "shop"))
	// A long prefix is shortened before the database.
	l := NewLabel(strings.Repeat("p", 200), "shop")
	assert.Contains(t, l, "-shop-")
}

func TestSeqLabel(t *testing.T) {
	w := NewWriterID()
	assert.Regexp(t, `^[0-9a-f]{8}$`, w)
	assert.NotEqual(t, w, NewWriterID())
	l := SeqLabel("benthos", "shop", w, 42)
	assert.Equal(t, "benthos-shop-"+w+"0000002a", l)
	assert.Regexp(t, `^benthos-shop-[0-9a-f]{16}$`, l, "the shape of NewLabel")
	stem, n, ok := SplitSeqLabel(l)
	require.True(t, ok)
	assert.Equal(t, "benthos-shop-"+w, stem)
	assert.Equal(t, int64(42), n)
	assert.Equal(t, SeqLabel("benthos", "shop", w, 43), StemLabel(stem, 43), "the stem names the writer's other labels")

	// Shortened like NewLabel, with the 16 digits whole, so the stem still
	// gives every label of the writer.
	long := SeqLabel(strings.Repeat("p", 200), strings.Repeat("d", 300), w, 0xfffffffe)
	require.NoError(t, ValidateLabel(long))
	assert.Len(t, long, MaxLabelLen)
	stem, n, ok = SplitSeqLabel(long)
	require.True(t, ok)
	assert.Equal(t, int64(0xfffffffe), n)
	assert.True(t, strings.HasSuffix(stem, "-"+w))

	for _, bad := range []string{"", "abc", "abc-0123456789abcdeg", "abc-01234567", "x-0123456700000000", "abc_0123456789abcdef", "0123456789abcdef"} {
		_, _, ok := SplitSeqLabel(bad)
		assert.False(t, ok, bad)
	}
}
