package kafka_txn

import (
	"os"
	"strings"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/docgen"
)

// TestReadmeDocumentsEveryField lints the README's configuration block and
// checks that its table names every field of the spec.
func TestReadmeDocumentsEveryField(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	require.NoError(t, err)
	conf, block, err := docgen.ReadmeConfig(string(raw))
	require.NoError(t, err)
	// The block shows partition beside the default partitioner, which the
	// lint rightly refuses; lint the rest.
	conf = strings.Replace(conf, `partition: ""`, "", 1)
	lints, err := service.NewEnvironment().NewComponentConfigLinter().LintOutputYAML([]byte(conf))
	require.NoError(t, err)
	assert.Empty(t, lints)
	spec, ok := service.NewEnvironment().GetOutputConfig(Name)
	require.True(t, ok)
	missing, err := docgen.UndocumentedFields(spec, string(raw), block)
	require.NoError(t, err)
	assert.Empty(t, missing, "fields the README lacks")
}
