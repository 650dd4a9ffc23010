package starrocks

import (
	"bytes"
	"encoding/json"
	"strings"
)

// IsDeleteRow reports whether a JSON row carries "__op": 1 (or "1"): a
// delete in StarRocks's JSON load format, which only a PRIMARY KEY table
// applies as one (any other table appends it as a row).
func IsDeleteRow(body []byte) bool {
	if !bytes.Contains(body, []byte(`"__op"`)) {
		return false
	}
	var op struct {
		Op json.RawMessage `json:"__op"`
	}
	if err := json.Unmarshal(body, &op); err != nil {
		return false
	}
	v := strings.Trim(string(op.Op), `" `)
	return v == "1"
}
