package kafka_txn

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestFetchErrorLogIsBounded reports fetch errors whose texts never repeat
// (an offset in each), as a long run with a flapping broker does: the
// rate-limiter's memory stays bounded, and a repeated error is still logged
// once.
func TestFetchErrorLogIsBounded(t *testing.T) {
	res, logs := newResources()
	in := newTestInput(t, res, `
seed_brokers: [ "127.0.0.1:1" ]
topics: [ cdc ]
consumer_group: g
`)
	for i := range 20000 {
		in.reportFetchError(testTopic, 0, fmt.Errorf("fetch offset %d: connection reset", i))
	}
	assert.LessOrEqual(t, in.logLim.Len(), 2048)

	same := errors.New("broker 1 is unreachable")
	for range 5 {
		in.reportFetchError(testTopic, 1, same)
	}
	assert.Equal(t, 1, strings.Count(logs.String(), "broker 1 is unreachable"), "a repeating error is rate-limited")
}
