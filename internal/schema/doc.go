// Package schema is what the project knows of StarRocks column types and
// table definitions, shared by everything that changes a table's schema in
// step with the source (ARCHITECTURE.md §14): the writers that learn a
// source table's columns (the Debezium input from Kafka Connect schemas,
// the assembler from Maxwell's DDL events and explicit schema events) and
// the output, which compares them with the columns StarRocks holds and
// applies what is missing.
//
// It is pure: parsing a type as information_schema.columns prints it
// (ParseType), deciding whether a column holds a source type or can be
// widened to it as StarRocks's schema-change rules allow (Holds, Widens;
// docs/notes/starrocks-protocol.md §11.4), the difference between a source
// table and the StarRocks table (Compare), and the DDL that closes it
// (CreateTableSQL, AddColumnsSQL, ModifyColumnSQL).
package schema
