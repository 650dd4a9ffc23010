// Package integration holds the end-to-end tests of the whole pipeline:
// an in-process Kafka cluster (kfake) fed by a transactional producer of
// orders / order_items / order_events source transactions, the real
// kafka_txn → txn_assembler → starrocks_txn stream built from YAML, and the
// StarRocks emulator, read concurrently over its MySQL port. The tests live
// in the _test.go files; README.md says what each proves and how to run the
// long variants.
package integration
