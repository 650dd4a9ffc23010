package specfields

import (
	"encoding/json"
	"errors"
	"testing"

	_ "github.com/redpanda-data/benthos/v4/public/components/pure"
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shape is what a field means to Benthos (parsing, linting, generated
// configs), without its prose and examples.
type shape struct {
	Name        string  `json:"name"`
	Type        string  `json:"type"`
	Kind        string  `json:"kind"`
	Default     any     `json:"default"`
	Advanced    bool    `json:"is_advanced"`
	Secret      bool    `json:"is_secret"`
	Optional    bool    `json:"is_optional"`
	Interpolate bool    `json:"interpolated"`
	Children    []shape `json:"children"`
}

func shapes(t *testing.T, fields ...*service.ConfigField) []shape {
	t.Helper()
	env := service.NewEnvironment()
	require.NoError(t, env.RegisterBatchOutput("shape", service.NewConfigSpec().Fields(fields...),
		func(*service.ParsedConfig, *service.Resources) (service.BatchOutput, service.BatchPolicy, int, error) {
			return nil, service.BatchPolicy{}, 0, errors.New("not built")
		}))
	// GetOutputConfig reads the global environment; a walk reads this one.
	var view *service.ConfigView
	env.WalkOutputs(func(name string, v *service.ConfigView) {
		if name == "shape" {
			view = v
		}
	})
	require.NotNil(t, view)
	raw, err := view.FormatJSON()
	require.NoError(t, err)
	var spec struct {
		Config struct {
			Children []shape `json:"children"`
		} `json:"config"`
	}
	require.NoError(t, json.Unmarshal(raw, &spec))
	var norm func([]shape)
	norm = func(ss []shape) {
		for i := range ss {
			if ss[i].Kind == "" {
				ss[i].Kind = "scalar" // Benthos's own default
			}
			norm(ss[i].Children)
		}
	}
	norm(spec.Config.Children)
	return spec.Config.Children
}

// The fields are Benthos's own in all but words and examples.
func TestSameShapeAsBenthos(t *testing.T) {
	assert.Equal(t, shapes(t, service.NewTLSToggledField("tls")), shapes(t, TLS("tls")))
	assert.Equal(t, shapes(t, service.NewBatchPolicyField("batching")), shapes(t, Batching("batching")))
}

// Benthos's readers read them.
func TestBenthosReadsThem(t *testing.T) {
	spec := service.NewConfigSpec().Fields(TLS("tls"), Batching("batching"))
	pc, err := spec.ParseYAML(`
tls:
  enabled: true
  skip_cert_verify: true
batching:
  count: 7
  byte_size: 100
  period: 50ms
  check: this.end == true
`, nil)
	require.NoError(t, err)
	tc, on, err := pc.FieldTLSToggled("tls")
	require.NoError(t, err)
	assert.True(t, on)
	assert.True(t, tc.InsecureSkipVerify)
	bp, err := pc.FieldBatchPolicy("batching")
	require.NoError(t, err)
	assert.Equal(t, 7, bp.Count)
	assert.Equal(t, 100, bp.ByteSize)
	assert.Equal(t, "50ms", bp.Period)
	assert.Equal(t, "this.end == true", bp.Check)

	pc, err = spec.ParseYAML("{}", nil)
	require.NoError(t, err)
	_, on, err = pc.FieldTLSToggled("tls")
	require.NoError(t, err)
	assert.False(t, on, "off by default")
	bp, err = pc.FieldBatchPolicy("batching")
	require.NoError(t, err)
	assert.True(t, bp.Count == 0 && bp.ByteSize == 0 && bp.Period == "", "no batching by default")
}
