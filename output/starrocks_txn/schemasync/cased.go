package schemasync

import (
	"fmt"
	"strings"

	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
)

// A source field whose name matches a column's only ignoring case is lost
// in every mode that loads it: StarRocks's JSON reader fills a column only
// from a key of exactly its name, and DDL compares names ignoring case, so
// no ADD COLUMN can make room for it (docs/notes/starrocks-protocol.md
// §11.8, ARCHITECTURE.md §14.2). evolve and error poison the rows with the
// field, the column and what to do; ignore counts the field like any other
// the table lacks.

// casedKeys returns the keys of an untyped row that match a column of have
// only ignoring case.
func casedKeys(have *schema.Table, keys []string) []schema.CaseMismatch {
	var out []schema.CaseMismatch
	for _, key := range keys {
		if key == "__op" {
			continue
		}
		if _, ok := have.LoadsInto(key); ok {
			continue
		}
		if c, ok := have.Column(key); ok {
			out = append(out, schema.CaseMismatch{Field: key, Column: c.Name})
		}
	}
	return out
}

// planCased settles the case mismatches of rows for k by mode: nil when the
// rows may go on (none, or ignore: counted), else the error that poisons
// them.
func (b *Book) planCased(k tableKey, cased []schema.CaseMismatch) error {
	if len(cased) == 0 {
		return nil
	}
	if b.conf.Mode == Ignore {
		for _, c := range cased {
			b.m.ignoredField(k, c.Field)
			if b.warnOnce(k, "cased", c.Field) {
				b.conf.Log.Warnf("Rows for %s carry the field %s, whose name matches the column %s only ignoring case: StarRocks drops its values (schema_evolution: ignore; counted in starrocks_txn_ignored_fields)", k, c.Field, c.Column)
			}
		}
		return nil
	}
	b.m.mismatch(k)
	msgs := make([]string, len(cased))
	fields := make([]string, len(cased))
	for i, c := range cased {
		msgs[i] = c.Error()
		fields[i] = c.Field + " to " + c.Column
	}
	return fmt.Errorf("table %s cannot take the source's rows (schema_evolution: %s): %s; rename %s at the source, or with a Bloblang mapping before the output (or set schema_evolution: ignore to load without %s)",
		k, b.conf.Mode, strings.Join(msgs, "; "), strings.Join(fields, ", "), plural(len(cased), "it", "them"))
}
