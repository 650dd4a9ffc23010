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
	// The block shows partition beside the default partitioner, which the
	// lint rightly refuses; lint the rest.
	problems, err := docgen.ReadmeProblems(service.NewEnvironment(), "output", Name, string(raw), func(conf string) string {
		return strings.Replace(conf, `partition: ""`, "", 1)
	})
	require.NoError(t, err)
	assert.Empty(t, problems)
}
