package starrocks

import (
	"regexp"
	"strings"
)

// Decisions callers take from the text of a StarRocks error, beyond its
// Class. Each predicate reads the whole error text (err.Error()), which for
// an *Error holds the server's Status and Message; the texts are the ones
// docs/notes/starrocks-protocol.md quotes (§4.4, §5.3–§5.6, §6.1).

// tableWideTexts are per-transaction load failures about the table itself
// (§5.4: "Failed to find table T in db D", a table that is not an OLAP
// table, "Only primary key table support …"; §5.3, §6.1: an unknown
// database), as opposed to failures caused by some of its rows.
var tableWideTexts = regexp.MustCompile(`(?i)failed to find table|unknown table|unknown database|does not exist|not an olap table|only primary key table support`)

// IsTableWide reports whether a failed load concerns its table as a whole,
// so that every source transaction writing to the table fails the same way.
// "does not exist" is in the set, so a load into a transaction StarRocks no
// longer has ("stream load task L does not exist", ClassTransient) matches
// too: callers ask it of per-transaction failures, or use it only to check
// the table again.
func IsTableWide(err error) bool {
	return err != nil && tableWideTexts.MatchString(err.Error())
}

// RollbackRefusal is what a refused rollback of a label says about its
// transaction (§4.4, §5.4, §5.6).
type RollbackRefusal int

const (
	// RefusalUnexplained: the text says nothing known.
	RefusalUnexplained RollbackRefusal = iota
	// RefusalFinished: the transaction is committed ("Can not abort VISIBLE
	// transaction N", COMMITTED or FINISHED, "has already been commited",
	// "already committed"). A multi-table FE says VISIBLE for a task it has
	// committed but not yet published (§5.6), so the label may not be
	// visible yet.
	RefusalFinished
	// RefusalCommitting: the FE is committing it ("Can not abort
	// transaction N during committing", "is committing", "already
	// committing"); its outcome comes.
	RefusalCommitting
	// RefusalNotFound: no transaction under the label ("stream load taskL
	// does not exist", "No transaction found by label L", "Transaction with
	// label L not exists").
	RefusalNotFound
)

func (r RollbackRefusal) String() string {
	switch r {
	case RefusalFinished:
		return "finished"
	case RefusalCommitting:
		return "committing"
	case RefusalNotFound:
		return "not_found"
	}
	return "unexplained"
}

var (
	refusalFinished   = regexp.MustCompile(`(?i)can ?not abort (visible|committed|commited|finished)|has already been commit|already committed`)
	refusalCommitting = regexp.MustCompile(`(?i)during committing|is committing|already committing`)
	refusalNotFound   = regexp.MustCompile(`(?i)does\s*not\s*exist|not exists|no transaction found`)
	unknownDatabase   = regexp.MustCompile(`(?i)unknown database|database\[[^\]]*\] does not exist`)
)

// RollbackRefusalOf classifies the error of a refused rollback. A text that
// matches several kinds is taken as the first of finished, committing, not
// found.
func RollbackRefusalOf(err error) RollbackRefusal {
	if err == nil {
		return RefusalUnexplained
	}
	text := err.Error()
	switch {
	case refusalFinished.MatchString(text):
		return RefusalFinished
	case refusalCommitting.MatchString(text):
		return RefusalCommitting
	case refusalNotFound.MatchString(text):
		return RefusalNotFound
	}
	return RefusalUnexplained
}

// IsUnknownDatabase reports whether err says the database does not exist
// ("unknown database, database=D" from get_load_state, §6.1;
// "Database[D] does not exist" from begin, §5.3): nothing can be committed in
// it.
func IsUnknownDatabase(err error) bool {
	return err != nil && unknownDatabase.MatchString(err.Error())
}

// NoMultiTable reports whether err is a StarRocks 3.x FE's answer to a
// multi-table begin in database db: the FE knows no transaction_type, sends
// the begin to a BE as a classic one without a table, and the FE's
// loadTxnBegin refuses the empty table name, `unknown table "<db>."`
// (ANALYSIS_ERROR), with nothing begun (docs/notes/starrocks-protocol.md
// §12.1). Only that exact name, the database and an empty table, counts: a
// 4.x FE never sends a multi-table begin to a BE, and a missing table or
// database reads otherwise. IsTableWide matches the text too, so a caller
// asks this first.
func NoMultiTable(err error, db string) bool {
	if err == nil || db == "" {
		return false
	}
	text := err.Error()
	for _, q := range []string{`"`, "`", `'`} {
		if strings.Contains(text, "unknown table "+q+db+"."+q) {
			return true
		}
	}
	return false
}
