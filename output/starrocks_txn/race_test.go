//go:build race

package starrocks_txn

// raceEnabled is set when the tests run under the race detector, which
// makes every call of the output and of the emulator several times slower:
// tests whose timeouts model a remote call's bound scale them by it.
const raceEnabled = true
