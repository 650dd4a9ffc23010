package jsonscan

import "testing"

// FuzzScanner checks every scanner function against encoding/json on
// arbitrary bytes: Valid, Fields.Scan, ScanRow and AppendUnquoted (the input
// as a string literal's content). The seeds are the hostile inputs and the
// committed corpus in testdata/fuzz/FuzzScanner; go test runs them, and
// `go test -run '^$' -fuzz FuzzScanner ./internal/jsonscan` explores further.
func FuzzScanner(f *testing.F) {
	for _, h := range hostile {
		f.Add([]byte(h))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkAll(t, b)
	})
}
