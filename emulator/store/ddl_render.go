package store

import (
	"fmt"
	"strings"
)

// DDL renders the table the way StarRocks's SHOW CREATE TABLE prints it: StarRocks type names
// with their display widths, NULL / NOT NULL, aggregation types, DEFAULT and COMMENT on each
// column, then ENGINE=OLAP, the key description, COMMENT, DISTRIBUTED BY, ORDER BY and
// PROPERTIES. The result parses back to the same table (ExecDDL).
func (sc *TableSchema) DDL() string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE %s (\n", quoteIdent(sc.Name))
	for i := range sc.Columns {
		b.WriteString("  " + columnSQL(&sc.Columns[i]))
		if i < len(sc.Columns)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString(") ENGINE=OLAP \n")
	fmt.Fprintf(&b, "%s(%s)\n", strings.ReplaceAll(sc.KeyType.String(), " ", " "), quoteList(sc.Key))
	if sc.comment != "" {
		b.WriteString("COMMENT " + quoteString(sc.comment) + "\n")
	}
	switch sc.distType {
	case "HASH":
		fmt.Fprintf(&b, "DISTRIBUTED BY HASH(%s)", quoteList(sc.distKeys))
	case "RANDOM":
		b.WriteString("DISTRIBUTED BY RANDOM")
	}
	if sc.distType != "" {
		if sc.buckets > 0 {
			fmt.Fprintf(&b, " BUCKETS %d", sc.buckets)
		}
		b.WriteString(" \n")
	}
	if len(sc.sortKeys) > 0 {
		fmt.Fprintf(&b, "ORDER BY(%s)\n", quoteList(sc.sortKeys))
	}
	props := sc.printedProperties()
	b.WriteString("PROPERTIES (\n")
	for i, p := range props {
		fmt.Fprintf(&b, "%s = %s", quoteString(p[0]), quoteString(p[1]))
		if i < len(props)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString(")")
	b.WriteString(";")
	return b.String()
}

// displayType is the column type as StarRocks prints it: integer types with their display
// width, STRING as varchar(65533), lower case.
func displayType(c *Column) string {
	switch c.Type {
	case TypeTinyInt:
		return "tinyint(4)"
	case TypeSmallInt:
		return "smallint(6)"
	case TypeInt:
		return "int(11)"
	case TypeBigInt:
		return "bigint(20)"
	case TypeLargeInt:
		return "largeint(40)"
	case TypeDecimal:
		return fmt.Sprintf("decimal(%d, %d)", c.Precision, c.Scale)
	case TypeChar:
		return fmt.Sprintf("char(%d)", c.Length)
	case TypeVarchar:
		return fmt.Sprintf("varchar(%d)", c.Length)
	case TypeString:
		return "varchar(65533)"
	case TypeArray:
		return "array<" + displayType(c.Elem) + ">"
	case TypeMap:
		return "map<" + displayType(c.MapKey) + "," + displayType(c.Elem) + ">"
	}
	return strings.ToLower(c.Type.String())
}

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

func quoteString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`)
	return `"` + r.Replace(s) + `"`
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quoteIdent(n)
	}
	return strings.Join(q, ", ")
}
