// Package debezium_txn is the debezium_txn input: it reads the per-table
// topics and the transaction topic a Debezium connector writes, assembles
// every source transaction across all data partitions, and emits complete
// transactions whole, in commit order, stamped with the metadata contract
// (internal/contract) so that the starrocks_txn output loads each one
// atomically (ARCHITECTURE.md §13).
//
// The pure parts — value decoding (values.go), envelope decoding
// (envelope.go) and the cross-partition assembler (assembler.go) — know
// nothing of Kafka clients; input.go and its neighbours are the franz-go
// plumbing.
package debezium_txn
