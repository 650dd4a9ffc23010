//go:build !race

package starrocks_txn

// raceEnabled: see race_test.go.
const raceEnabled = false
