package starrocks

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Name limits from the StarRocks System_limit page: a database name is at
// most 256 characters, a table (or column) name at most 1024.
const (
	maxDatabaseNameLen = 256
	maxTableNameLen    = 1024
	// MaxLabelLen is the FE limit on a label (FeNameFormat ^[-\w]{1,128}$).
	MaxLabelLen = 128
	// labelRandomBytes gives the random suffix of NewLabel 64 bits: two
	// labels of one prefix and database never collide in practice.
	labelRandomBytes = 8
)

var labelRE = regexp.MustCompile(`^[-\w]{1,128}$`)

// ValidateName checks a database or table name before it is put into an HTTP
// header or path. kind ("database", "table") names the thing in the error.
// Allowed: ASCII letters, digits, '_', '-' and '$', within the StarRocks
// length limit of the kind (database 256, table 1024 characters).
func ValidateName(kind, name string) error {
	if name == "" {
		return fmt.Errorf("invalid %s name: it is empty; set a %s name of letters, digits, '_', '-' or '$'", kind, kind)
	}
	limit := maxTableNameLen
	if kind == "database" {
		limit = maxDatabaseNameLen
	}
	if n := utf8.RuneCountInString(name); n > limit {
		return fmt.Errorf("invalid %s name %q: %d characters, StarRocks allows at most %d", kind, truncateForError(name), n, limit)
	}
	for i, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '$':
			continue
		case r < 0x20 || r == 0x7f:
			return fmt.Errorf("invalid %s name %q: control character %q at byte %d (CR/LF and other control characters would corrupt the HTTP request); use letters, digits, '_', '-' or '$'", kind, truncateForError(name), r, i)
		default:
			return fmt.Errorf("invalid %s name %q: character %q at byte %d is not allowed; use letters, digits, '_', '-' or '$'", kind, truncateForError(name), r, i)
		}
	}
	return nil
}

// ValidateLabel checks a transaction label against the FE rule
// ^[-\w]{1,128}$ (ASCII letters, digits, '_' and '-').
func ValidateLabel(label string) error {
	if labelRE.MatchString(label) {
		return nil
	}
	if label == "" {
		return fmt.Errorf("invalid label: it is empty; StarRocks needs 1 to %d letters, digits, '_' or '-'", MaxLabelLen)
	}
	if len(label) > MaxLabelLen {
		return fmt.Errorf("invalid label %q: %d bytes, StarRocks allows at most %d", truncateForError(label), len(label), MaxLabelLen)
	}
	return fmt.Errorf("invalid label %q: only letters, digits, '_' and '-' are allowed", truncateForError(label))
}

// NewLabel returns "<prefix>-<db>-<random>" (or "<db>-<random>" without a
// prefix). Characters a label may not hold are replaced by '_', and prefix
// and db are shortened so the label never exceeds 128 characters; the random
// part (16 hex digits) is always kept whole, so the result always passes
// ValidateLabel.
func NewLabel(prefix, db string) string {
	return joinLabel(prefix, db, randomHex(labelRandomBytes))
}

// NewWriterID returns a random token (8 hex digits) naming one writer: one
// run of a process that labels its transactions with SeqLabel.
func NewWriterID() string {
	return randomHex(4)
}

// SeqLabel returns the n-th label of a writer in a database:
// "<prefix>-<db>-<writer><n>", with writer 8 hex digits (NewWriterID) and n
// (1, 2, 3, …) as 8 more, so it has NewLabel's shape — 16 hex digits after
// the database. Numbered labels let another process look up, by label, every
// transaction the writer may have left unresolved (get_load_state on
// consecutive numbers). Prefix and db are sanitised and shortened as in
// NewLabel; the 16 digits are kept whole, so SplitSeqLabel recovers n and the
// stem of the writer's labels. n wraps at 2^32.
func SeqLabel(prefix, db, writer string, n int64) string {
	return joinLabel(prefix, db, sanitizeLabelPart(writer)+seqDigits(n))
}

func seqDigits(n int64) string {
	return fmt.Sprintf("%08x", uint32(n))
}

// SplitSeqLabel splits a SeqLabel into its stem (all but the last 8 hex
// digits) and number. ok is false when the label does not end in 16 hex
// digits after a '-', or n is 0.
func SplitSeqLabel(label string) (stem string, n int64, ok bool) {
	if len(label) < 18 || label[len(label)-17] != '-' {
		return "", 0, false
	}
	for _, r := range label[len(label)-16:] {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return "", 0, false
		}
	}
	v, err := strconv.ParseUint(label[len(label)-8:], 16, 32)
	if err != nil || v == 0 {
		return "", 0, false
	}
	return label[:len(label)-8], int64(v), true
}

// PartRoom is what CycleLabel leaves free of the 128 characters of a label
// for a part (PartLabel): a dash and up to 7 characters.
const PartRoom = 8

// CycleLabel is SeqLabel with PartRoom characters left free, so that every
// PartLabel of it is a valid label: the label of a per-table cycle (its
// decision) and the stem of its parts (ARCHITECTURE.md §15.1). For short
// prefixes and databases it equals SeqLabel; SplitSeqLabel splits it the
// same way.
func CycleLabel(prefix, db, writer string, n int64) string {
	return joinLabelRoom(prefix, db, sanitizeLabelPart(writer)+seqDigits(n), PartRoom)
}

// PartLabel returns the label of one part of a per-table cycle:
// "<cycle>-<part>", part one to seven letters or digits (a table's number
// in the cycle, "p" for the progress table).
func PartLabel(cycle, part string) string {
	return cycle + "-" + part
}

// SplitPartLabel splits a PartLabel into its cycle label and part. ok is
// false when the label is not a part of a numbered cycle label (a cycle
// label itself, for one: its last 16 characters are hex digits).
func SplitPartLabel(label string) (cycle, part string, ok bool) {
	i := strings.LastIndexByte(label, '-')
	if i < 0 || len(label)-i-1 < 1 || len(label)-i-1 > PartRoom-1 {
		return "", "", false
	}
	cycle, part = label[:i], label[i+1:]
	for _, r := range part {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z') {
			return "", "", false
		}
	}
	if _, _, seq := SplitSeqLabel(cycle); !seq {
		return "", "", false
	}
	return cycle, part, true
}

// StemLabel returns the n-th label of the writer whose labels start with
// stem (see SplitSeqLabel).
func StemLabel(stem string, n int64) string {
	return stem + seqDigits(n)
}

func randomHex(n int) string {
	rnd := make([]byte, n)
	if _, err := rand.Read(rnd); err != nil {
		// crypto/rand never fails on supported platforms (Go 1.24+ crashes
		// instead), so this is unreachable.
		panic(fmt.Sprintf("reading random label bytes: %v", err))
	}
	return hex.EncodeToString(rnd)
}

// joinLabel returns "<prefix>-<db>-<tail>" (or "<db>-<tail>"), shortening
// the prefix first, then db, so that the label fits 128 characters with the
// tail whole.
func joinLabel(prefix, db, tail string) string { return joinLabelRoom(prefix, db, tail, 0) }

// joinLabelRoom is joinLabel with room characters of the 128 left free.
func joinLabelRoom(prefix, db, tail string, room int) string {
	prefix, db = sanitizeLabelPart(prefix), sanitizeLabelPart(db)
	if db == "" {
		db = "db"
	}
	budget := MaxLabelLen - room - len(tail) - 1
	head := db
	if prefix != "" {
		head = prefix + "-" + db
	}
	if len(head) > budget {
		over := len(head) - budget
		if prefix != "" {
			cut := min(over, len(prefix)-1)
			prefix = prefix[:len(prefix)-cut]
			over -= cut
		}
		if over > 0 {
			db = db[:len(db)-over]
		}
		head = db
		if prefix != "" {
			head = prefix + "-" + db
		}
	}
	return head + "-" + tail
}

func sanitizeLabelPart(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return '_'
	}, s)
}

// truncateForError keeps error texts short when a huge name is rejected.
func truncateForError(s string) string {
	const maxShown = 80
	if len(s) <= maxShown {
		return s
	}
	return s[:maxShown] + "…"
}
