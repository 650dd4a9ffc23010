// Package all registers what the shipped configs (config/, examples/) need
// from a Benthos binary: Benthos's own io and pure components (the file and
// stdin inputs, the lines scanner, the mapping processor, the HTTP server's
// endpoints, …) and every plugin of this project (components). A custom
// binary that blank-imports this one package runs every shipped config:
//
//	import _ "github.com/starrocks-txn/benthos-starrocks/components/all"
//
// components alone registers only the plugins: a binary built on another
// distribution of components (Redpanda Connect's, which brings its own io
// and pure) or a deliberately small one imports that instead. The
// project's binary imports this package, so it and a custom binary built
// from it have the same components.
package all

import (
	_ "github.com/redpanda-data/benthos/v4/public/components/io"
	_ "github.com/redpanda-data/benthos/v4/public/components/pure"

	_ "github.com/starrocks-txn/benthos-starrocks/components"
)
