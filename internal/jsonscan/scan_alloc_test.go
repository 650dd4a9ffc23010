package jsonscan

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
)

// Scan decodes nothing: a string member whose key is none of the wanted
// names is only validated. (scan takes unquote == -1 for Scan, and -1 is
// also the slot of a key that is not wanted, so each such string used to
// go through strAppend and be decoded into a fresh slice.) A Maxwell row
// carries several of them ("position", "gtid", ...), an allocation each.
func TestScanDecodesNoOtherMember(t *testing.T) {
	f := NewFields("database", "table", "type", "data")
	b := []byte(`{"database":"test","table":"e","type":"insert","ts":1477053217,"position":"master.000006:800911","gtid":"3e11fa47-71ca-11e1-9e33-c80aa9429562:23","data":{"id":1}}`)
	out := make([]Value, f.Len())
	allocs := testing.AllocsPerRun(100, func() {
		if st := f.Scan(b, out); st != OK {
			t.Fatalf("scan: %v", st)
		}
	})
	assert.Zero(t, allocs, "allocations per Scan of a row with other string members")

	// ScanUnquote of one member decodes that one only.
	dst := make([]byte, 0, 256)
	allocs = testing.AllocsPerRun(100, func() {
		if st, _ := f.ScanUnquote(b, out, 0, dst[:0]); st != OK {
			t.Fatalf("scan: %v", st)
		}
	})
	assert.Zero(t, allocs, "allocations per ScanUnquote into a large enough buffer")
}

// Hashing a row's keys allocates nothing, escaped keys included.
func TestKeysAllocateNothing(t *testing.T) {
	f := NewFields("type", "data")
	b := []byte(`{"type":"insert","data":{"id":1,"customer_id":42,"n\u00e4me":"x","\u005f_op":0}}`)
	row := []byte(`{"id":1,"customer_id":42,"n\u00e4me":"x","__op":0}`)
	out := make([]Value, f.Len())
	var keys schema.KeysHash
	allocs := testing.AllocsPerRun(100, func() {
		if st := f.ScanKeys(b, out, 1, &keys); st != OK {
			t.Fatalf("scan: %v", st)
		}
		if st, _ := ObjectKeys(row); st != OK {
			t.Fatalf("object keys: %v", st)
		}
		if st, _ := ScanRow(row, "__op"); st != OK {
			t.Fatalf("scan row: %v", st)
		}
	})
	assert.Zero(t, allocs, "allocations per key hashing scan")
}
