package store

// unsupportedStatement names StarRocks statements about storage the emulator does not have
// (materialized views, partitions, tablets, data sizes) and says what to do instead, so the
// user gets that rather than go-mysql-server's syntax error; "" for any other statement.
func unsupportedStatement(toks []token) string {
	if len(toks) < 2 {
		return ""
	}
	k := toks[1]
	switch {
	case toks[0].is("create") && k.is("materialized"):
		return "CREATE MATERIALIZED VIEW is not supported by the emulator: it keeps no materialized views; query the base tables, or create a table and load it"
	case !toks[0].is("show"):
		return ""
	case k.is("partitions") || k.is("temporary") && len(toks) > 2 && toks[2].is("partitions"):
		return "SHOW PARTITIONS is not supported by the emulator: it accepts PARTITION BY but keeps each table in one partition; SHOW CREATE TABLE shows the table"
	case k.is("tablet") || k.is("tablets"):
		return "SHOW TABLET is not supported by the emulator: it stores no tablets (one in-memory table per CREATE TABLE)"
	case k.is("data"):
		return "SHOW DATA is not supported by the emulator: it measures no data sizes; SELECT COUNT(*) counts a table's rows"
	}
	return ""
}
