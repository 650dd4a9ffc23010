package starrocks_txn

import (
	"errors"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// transaction_mode and prepared_timeout (mode.go): the lint and the start
// refuse the same values with the same words.
var modeLintCases = []lintCase{
	{name: "transaction_mode unknown", bad: "transaction_mode: per-table", good: "transaction_mode: per_table",
		want: `transaction_mode "per-table" must be one of auto, multi_table, per_table`},
	{name: "prepared_timeout without unit", bad: "prepared_timeout: 3600", good: "prepared_timeout: 3600s",
		want: `prepared_timeout: "3600" is not a duration: give a number and a unit, e.g. 500ms or 10s`},
	{name: "prepared_timeout below 10s", bad: "prepared_timeout: 5s\nrequest_timeout: 1s", good: "prepared_timeout: 10s\nrequest_timeout: 1s",
		want: msgPreparedTimeout},
	{name: "prepared_timeout below twice request_timeout", bad: "prepared_timeout: 90s", good: "prepared_timeout: 2m",
		want: msgPreparedTimeout},
	{name: "prepared_timeout negative", bad: "prepared_timeout: -1h", good: "prepared_timeout: 0s",
		want: msgPreparedTimeout},
}

func TestLintTransactionMode(t *testing.T) {
	env := service.NewEnvironment()
	require.NoError(t, env.RegisterBatchOutput("starrocks_txn", outputSpec(),
		func(*service.ParsedConfig, *service.Resources) (service.BatchOutput, service.BatchPolicy, int, error) {
			return nil, service.BatchPolicy{}, 1, errors.New("not built in this test")
		}))
	linter := env.NewComponentConfigLinter()
	for _, tc := range modeLintCases {
		t.Run(tc.name, func(t *testing.T) {
			bad, good := withURL(tc.bad), withURL(tc.good)
			texts := lintTexts(t, linter, bad)
			require.NotEmpty(t, texts, "the lint of\n%s", bad)
			assert.Contains(t, texts, tc.want, "the lint of\n%s", bad)
			assert.Empty(t, lintTexts(t, linter, good), "the lint of\n%s", good)
			err := startErr(t, bad)
			require.Error(t, err, "the start of\n%s", bad)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
