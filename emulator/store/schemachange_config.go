package store

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The FE configs of schema changes, which ADMIN SET / SHOW FRONTEND CONFIG reach on the
// MySQL port (system.go) and the server sets from its flags.

// schemaChangeConfigs are the store's own FE configs.
var schemaChangeConfigs = []struct{ key, typ, comment string }{
	{"enable_fast_schema_evolution", "boolean", "fast_schema_evolution of a table created without the property"},
	{"alter_table_timeout_second", "int", "seconds a schema change job may take before it is CANCELLED (Timeout)"},
	{"emulator_schema_change_run_ms", "int", "the emulator's: milliseconds a schema change job stays RUNNING"},
}

// schemaChangeConfigItems lists them with their values.
func (s *Store) schemaChangeConfigItems() []ConfigItem {
	s.mu.Lock()
	defer s.mu.Unlock()
	vals := []string{strconv.FormatBool(s.sc.fseDefault), strconv.FormatInt(int64(s.sc.timeout/time.Second), 10),
		strconv.FormatInt(s.sc.runTime.Milliseconds(), 10)}
	out := make([]ConfigItem, len(schemaChangeConfigs))
	for i, c := range schemaChangeConfigs {
		out[i] = ConfigItem{Key: c.key, Value: vals[i], Type: c.typ, Comment: c.comment}
	}
	return out
}

// setSchemaChangeConfig sets one of them; ok is false for another key.
func (s *Store) setSchemaChangeConfig(key, value string) (bool, error) {
	switch key {
	case "enable_fast_schema_evolution":
		b := strings.EqualFold(value, "true")
		if !b && !strings.EqualFold(value, "false") {
			return true, fmt.Errorf("Failed to set config '%s'. err: Invalid boolean value: %s", key, value)
		}
		s.SetFastSchemaEvolutionDefault(b)
	case "alter_table_timeout_second", "emulator_schema_change_run_ms":
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n < 0 {
			return true, fmt.Errorf("Failed to set config '%s'. err: For input string: \"%s\"", key, value)
		}
		if key == "alter_table_timeout_second" {
			s.SetAlterTableTimeout(time.Duration(n) * time.Second)
		} else {
			s.SetSchemaChangeRunTime(time.Duration(n) * time.Millisecond)
		}
	default:
		return false, nil
	}
	return true, nil
}
