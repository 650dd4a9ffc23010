package docgen

import (
	"strings"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func init() {
	spec := service.NewConfigSpec().Fields(service.NewIntField("alpha"), service.NewIntField("beta").Default(0), service.NewIntField("gamma").Default(0))
	if err := service.RegisterInput("readme_probe", spec, func(*service.ParsedConfig, *service.Resources) (service.Input, error) { return nil, nil }); err != nil {
		panic(err)
	}
}

const probeReadme = "# x\n\n## Configuration\n\n```yaml\ninput:\n  readme_probe:\n    alpha: 1\n```\n\n| field |\n|---|\n| `alpha` |\n| `beta` |\n"

// The configuration block is found and unindented for the linter, and a
// field missing from the table or the block is named.
func TestReadmeChecks(t *testing.T) {
	conf, block, err := ReadmeConfig(probeReadme)
	require.NoError(t, err)
	assert.Equal(t, "readme_probe:\n  alpha: 1\n", conf)
	assert.Equal(t, "input:\n  readme_probe:\n    alpha: 1\n", block)

	// GetInputConfig reads the global environment's plugins only.
	view, ok := service.GlobalEnvironment().GetInputConfig("readme_probe")
	require.True(t, ok)
	missing, err := UndocumentedFields(view, probeReadme, block)
	require.NoError(t, err)
	assert.Equal(t, []string{"beta (config block)", "gamma (field table)", "gamma (config block)"}, missing)

	_, _, err = ReadmeConfig("# no configuration\n")
	assert.Error(t, err)
}

// ReadmeProblems reports the block's lint findings and the missing fields;
// edit adjusts the config before the lint.
func TestReadmeProblems(t *testing.T) {
	env := service.GlobalEnvironment()
	problems, err := ReadmeProblems(env, "input", "readme_probe", probeReadme, func(conf string) string {
		return conf + "  delta: 2\n"
	})
	require.NoError(t, err)
	require.Len(t, problems, 4, "%q", problems)
	assert.True(t, strings.HasPrefix(problems[0], "lint: ") && strings.Contains(problems[0], "delta"), problems[0])
	assert.Equal(t, "the README lacks field beta (config block)", problems[1])

	_, err = ReadmeProblems(env, "input", "no_such_plugin", probeReadme, nil)
	assert.Error(t, err)
	_, err = ReadmeProblems(env, "cache", "readme_probe", probeReadme, nil)
	assert.Error(t, err)
}
