package kafka

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxByteSize is the largest size ParseByteSize accepts: Kafka sizes are
// 32-bit, and no broker takes more.
const MaxByteSize = 1 << 30

// ParseByteSize reads a size such as 1048576, 512KiB, 1MiB or 1MB (a
// positive number, optionally followed by B, KB, MB, GB, KiB, MiB or GiB),
// at most 1GiB.
func ParseByteSize(s string) (int32, error) {
	n, err := ParseByteSizeMax(s, MaxByteSize)
	return int32(n), err
}

// ParseByteSizeMax reads a size as ParseByteSize does, at most max bytes
// (for sizes that are not Kafka's, such as a buffer bound).
func ParseByteSizeMax(s string, max int64) (int64, error) {
	s = strings.TrimSpace(s)
	orig := s
	units := []struct {
		suffix string
		mult   int64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
		{"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000},
		{"B", 1},
	}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			mult = u.mult
			s = strings.TrimSpace(strings.TrimSuffix(s, u.suffix))
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a positive byte size (examples: 1048576, 512KiB, 1MiB)", s)
	}
	if n > max/mult {
		return 0, fmt.Errorf("%q is above the %s maximum", orig, byteSizeString(max))
	}
	return n * mult, nil
}

// byteSizeString writes n with the largest binary unit that divides it
// (1GiB, 256MiB, 1000B).
func byteSizeString(n int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}
