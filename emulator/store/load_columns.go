package store

import (
	"fmt"
	"strconv"
	"strings"
)

// The columns header's "target = expr" entries: a constant, a source field, or an expression
// over the source fields (load_expr.go), applied to each row before it converts.

// derivedCol is a `columns` entry "target = expr": a constant, a source field, or an
// expression over the source fields.
type derivedCol struct {
	name, expr string
	target     int      // column index or targetOp
	isConst    bool     // constant text in value
	value      string   // the constant
	source     int      // index of the referenced source field (plain entries), or -1
	fn         exprFunc // a general expression over every plain entry, or nil
	nplain     int      // the number of plain entries fn reads
}

// derivedColumn parses one mapping expression: a quoted string, a number, NULL, the name of
// a source field listed as a plain entry, or an expression over those fields (functions,
// casts, arithmetic: see load_expr.go).
func (b *rowBuilder) derivedColumn(name, expr string, entries []string) (derivedCol, error) {
	d := derivedCol{name: name, expr: expr, target: b.sc.ColumnIndex(name), source: -1}
	if d.target < 0 {
		if !(b.opCol && strings.EqualFold(name, "__op")) {
			return d, fmt.Errorf("columns header: Unknown column '%s' in '%s'", name, b.sc.Name)
		}
		d.target = targetOp
	}
	switch {
	case len(expr) >= 2 && (expr[0] == '\'' || expr[0] == '"') && expr[len(expr)-1] == expr[0]:
		d.isConst, d.value = true, expr[1:len(expr)-1]
	case expr != "" && (expr[0] == '-' || expr[0] >= '0' && expr[0] <= '9'):
		if _, err := strconv.ParseFloat(expr, 64); err != nil {
			return d, fmt.Errorf("columns header: %s = %s is not supported by the emulator (only constants and source field names)", name, expr)
		}
		d.isConst, d.value = true, expr
	case strings.EqualFold(expr, "null"):
		d.isConst, d.value = true, `\N`
	default:
		ref := strings.Trim(expr, "`")
		var plain []string
		for _, e := range entries {
			if !strings.Contains(e, "=") {
				plain = append(plain, e)
			}
		}
		for i, e := range plain {
			if strings.EqualFold(e, ref) {
				d.source = i
				return d, nil
			}
		}
		if d.target == targetOp {
			return d, fmt.Errorf("columns header: __op = %s: use 'upsert', 'delete', 0, 1 or a source field", expr)
		}
		fn, err := compileExpr(plain, expr)
		if err != nil {
			return d, err
		}
		d.fn, d.nplain = fn, len(plain)
		return d, nil
	}
	if d.target == targetOp {
		switch strings.ToLower(d.value) {
		case "delete", "1":
			d.value = "1"
		case "upsert", "0":
			d.value = "0"
		default:
			return d, fmt.Errorf("columns header: __op = %s: use 'upsert', 'delete', 0 or 1", expr)
		}
	}
	return d, nil
}

// applyDerived sets the columns computed by mapping expressions; field returns a source
// field's text by its plain-entry index (false when the row has no such field).
func (b *rowBuilder) applyDerived(field func(i int) (string, bool)) {
	for _, d := range b.derived {
		text := d.value
		switch {
		case d.fn != nil:
			src := make([]any, d.nplain)
			for i := range src {
				if t, ok := field(i); ok && t != `\N` {
					src[i] = t
				}
			}
			v, ok, err := d.fn(src, b.tz)
			switch {
			case err != nil:
				b.seen[d.target] = false
				b.setValue(d.target, nil, err, func() string { return d.expr })
				continue
			case !ok:
				text = `\N`
			default:
				text = v
			}
		case !d.isConst:
			t, ok := field(d.source)
			if !ok {
				continue
			}
			text = t
		}
		if d.target == targetOp {
			b.setOp(text)
			continue
		}
		b.seen[d.target] = false // the expression wins over a source field of the same name
		if text == `\N` {
			b.setValue(d.target, nil, nil, nil)
			continue
		}
		c := &b.sc.Columns[d.target]
		v, err := convertText(c, text)
		b.setValue(d.target, v, err, func() string { return text })
	}
}
