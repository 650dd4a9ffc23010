//go:build tools

// Pins the libraries the project builds on so that `go mod tidy` keeps them
// while the packages that use them are written.
package main

import (
	_ "github.com/dolthub/go-mysql-server"
	_ "github.com/go-sql-driver/mysql"
	_ "github.com/pierrec/lz4/v4"
	_ "github.com/stretchr/testify/require"
	_ "github.com/twmb/franz-go/pkg/kadm"
	_ "github.com/twmb/franz-go/pkg/kfake"
	_ "github.com/twmb/franz-go/pkg/kgo"
	_ "pgregory.net/rapid"
)
