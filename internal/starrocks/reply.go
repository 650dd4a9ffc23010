package starrocks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Reply is one parsed StarRocks reply. Fields holds the top-level JSON
// object with lower-cased keys: the FE TransactionResult says "Status" and
// "Message", RestBaseResult "status", "msg" and "message", get_load_state
// adds "state"; all are read the same way.
type Reply struct {
	HTTPCode int
	Fields   map[string]any
	Raw      []byte

	// parseErr is set when Raw is not a JSON object.
	parseErr error
}

// Get returns the field key (case-insensitive) as a string: strings as they
// are, numbers in their JSON spelling, booleans as "true"/"false", null or
// absent as "", objects and arrays as JSON.
func (r *Reply) Get(key string) string {
	if r == nil || r.Fields == nil {
		return ""
	}
	v, ok := r.Fields[strings.ToLower(key)]
	if !ok {
		return ""
	}
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case json.Number:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Sprint(v)
		}
		return string(b)
	}
}

// Status is the reply's Status ("OK", "FAILED", "TXN_IN_PROCESSING"…).
func (r *Reply) Status() string { return r.Get("status") }

// Message is the reply's Message, or its msg when Message is absent or
// empty (RestBaseResult carries both).
func (r *Reply) Message() string {
	if m := r.Get("message"); m != "" {
		return m
	}
	return r.Get("msg")
}

// errorBodyPrefix is how much of a body that is not JSON an error keeps.
const errorBodyPrefix = 256

// parseReply decodes a JSON object body into a Reply. A body that is not a
// JSON object yields the Reply (with nil Fields) and an error quoting the
// first bytes of the body.
func parseReply(code int, raw []byte) (*Reply, error) {
	rep := &Reply{HTTPCode: code, Raw: raw}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return rep, fmt.Errorf("reply is not a JSON object (HTTP %d, %d bytes): %q", code, len(raw), bodyPrefix(raw))
	}
	rep.Fields = make(map[string]any, len(m))
	// Keys that differ only in case: keep a non-empty value, and of several
	// the one whose key sorts first (upper case first, as the FE's
	// TransactionResult spells them). Sorted, so the same body always gives
	// the same reply: map order would make it random.
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		lk := strings.ToLower(k)
		if old, dup := rep.Fields[lk]; dup && old != nil && old != "" {
			continue
		}
		rep.Fields[lk] = m[k]
	}
	return rep, nil
}

func bodyPrefix(raw []byte) string {
	if len(raw) <= errorBodyPrefix {
		return string(raw)
	}
	return string(raw[:errorBodyPrefix]) + "…"
}
