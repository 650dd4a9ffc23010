package docgen

import (
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The configuration block is found and unindented for the linter, and a
// field missing from the table or the block is named.
func TestReadmeChecks(t *testing.T) {
	readme := "# x\n\n## Configuration\n\n```yaml\ninput:\n  readme_probe:\n    alpha: 1\n```\n\n| field |\n|---|\n| `alpha` |\n| `beta` |\n"
	conf, block, err := ReadmeConfig(readme)
	require.NoError(t, err)
	assert.Equal(t, "readme_probe:\n  alpha: 1\n", conf)
	assert.Equal(t, "input:\n  readme_probe:\n    alpha: 1\n", block)

	env := service.NewEnvironment()
	spec := service.NewConfigSpec().Fields(service.NewIntField("alpha"), service.NewIntField("beta"), service.NewIntField("gamma"))
	require.NoError(t, env.RegisterInput("readme_probe", spec, func(*service.ParsedConfig, *service.Resources) (service.Input, error) { return nil, nil }))
	// GetInputConfig reads only the global environment's plugins.
	var view *service.ConfigView
	env.WalkInputs(func(name string, v *service.ConfigView) {
		if name == "readme_probe" {
			view = v
		}
	})
	require.NotNil(t, view)
	missing, err := UndocumentedFields(view, readme, block)
	require.NoError(t, err)
	assert.Equal(t, []string{"beta (config block)", "gamma (field table)", "gamma (config block)"}, missing)

	_, _, err = ReadmeConfig("# no configuration\n")
	assert.Error(t, err)
}
