package txnassembler

import (
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every value rule of the assembler: the lint names the bad value, the start
// refuses it with the same text (start: false marks a lint-only rule, for a
// field the start ignores), and the good value passes both.
func TestLintValueRules(t *testing.T) {
	env := service.NewEnvironment()
	require.NoError(t, env.RegisterBatchProcessor(Name, processorSpec(), func(c *service.ParsedConfig, r *service.Resources) (service.BatchProcessor, error) {
		return newFromConfig(c, r)
	}))
	linter := env.NewComponentConfigLinter()
	lint := func(fields string) []string {
		lints, err := linter.LintProcessorYAML([]byte("txn_assembler:\n" + fields))
		require.NoError(t, err)
		var out []string
		for _, l := range lints {
			out = append(out, l.What)
		}
		return out
	}
	start := func(fields string) error {
		pc, err := processorSpec().ParseYAML(fields, nil)
		require.NoError(t, err)
		_, err = newFromConfig(pc, service.MockResources())
		return err
	}
	for _, tc := range []struct {
		name, bad, good, want string
		lintOnly              bool
	}{
		{name: "blank target", bad: "  table_mapping: {shop.a: ' '}\n", good: "  table_mapping: {shop.a: a}\n",
			want: `table_mapping entry "shop.a": " ": source and target must not be empty`},
		{name: "blank source", bad: "  table_mapping: {' ': a}\n", good: "  table_mapping: {b: a}\n",
			want: `table_mapping entry " ": "a": source and target must not be empty`},
		{name: "target with two dots", bad: "  table_mapping: {shop.a: x.y.z}\n", good: "  table_mapping: {shop.a: x.y}\n",
			want: `table_mapping entry "shop.a": "x.y.z": the target must be table or database.table`},
		{name: "target without a table", bad: "  table_mapping: {shop.a: 'analytics.'}\n", good: "  table_mapping: {shop.a: analytics.a}\n",
			want: `table_mapping entry "shop.a": "analytics.": the target must be table or database.table`},
		{name: "target with a blank", bad: "  table_mapping: {shop.a: 'order items'}\n", good: "  table_mapping: {shop.a: order_items}\n",
			want: `table_mapping entry "shop.a": "order items": the target must be table or database.table`},
		{name: "blank database", bad: "  database: '  '\n", good: "  database: ''\n",
			want: "database must not be blank: leave it empty to keep each event's database"},
		{name: "custom without format custom", bad: "  custom: {kind: 'root = \"data\"'}\n", good: "  format: custom\n  custom: {kind: 'root = \"data\"'}\n",
			want: "custom is only read when format is custom", lintOnly: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, []string{tc.want}, lint(tc.bad))
			assert.Empty(t, lint(tc.good))
			if !tc.lintOnly {
				err := start(tc.bad)
				require.Error(t, err)
				assert.Equal(t, tc.want, err.Error())
			}
			assert.NoError(t, start(tc.good))
		})
	}
}
