package store

// texts shares the stored value of short text values that repeat within one load (a status,
// a product name): rows keep an interface value, and a string in an interface is two objects
// (the bytes and the boxed header), so a load of rows that repeat a few values would
// otherwise hold two objects per value for the garbage collector to trace for as long as the
// rows live. Sharing is invisible: strings never change, and apply only replaces a row's
// values, never mutates one.
type texts struct {
	byCol []map[string]any // per column index; nil until the column's first text value
	n     int
}

// Bounds: only values up to maxTextShared bytes are shared, and at most maxTextsPerLoad of
// them per load, so that a load of unique values costs one map insertion per value until the
// bound and nothing after it.
const (
	maxTextShared   = 64
	maxTextsPerLoad = 1024
)

// get returns the shared value of column ci for the text s (the unescaped JSON string's bytes).
func (t *texts) get(ci int, s []byte) (any, bool) {
	if ci >= len(t.byCol) || t.byCol[ci] == nil {
		return nil, false
	}
	v, ok := t.byCol[ci][string(s)]
	return v, ok
}

// put remembers v as column ci's value for the text s, within the bounds.
func (t *texts) put(ci int, s string, v any) {
	if len(s) > maxTextShared || t.n >= maxTextsPerLoad {
		return
	}
	if ci >= len(t.byCol) {
		t.byCol = append(t.byCol, make([]map[string]any, ci+1-len(t.byCol))...)
	}
	if t.byCol[ci] == nil {
		t.byCol[ci] = map[string]any{}
	}
	t.byCol[ci][s] = v
	t.n++
}
