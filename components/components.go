// Package components registers every plugin of this project with Benthos:
// the kafka_txn and debezium_txn inputs, the txn_assembler processor, the
// starrocks_txn and kafka_txn outputs and the prometheus metrics exporter.
// Blank-import it in a custom Benthos binary to get them all:
//
//	import _ "github.com/starrocks-txn/benthos-starrocks/components"
//
// The project's own binary, its commands and its integration tests import
// this one package, so they always run the same set of plugins.
package components

import (
	_ "github.com/starrocks-txn/benthos-starrocks/input/debezium_txn"
	_ "github.com/starrocks-txn/benthos-starrocks/input/kafka_txn"
	_ "github.com/starrocks-txn/benthos-starrocks/metrics/prometheus"
	_ "github.com/starrocks-txn/benthos-starrocks/output/kafka_txn"
	_ "github.com/starrocks-txn/benthos-starrocks/output/starrocks_txn"
	_ "github.com/starrocks-txn/benthos-starrocks/processor/txn_assembler"
)
