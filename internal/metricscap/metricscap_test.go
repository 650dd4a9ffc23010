package metricscap

import (
	"context"
	"testing"
	"time"

	_ "github.com/redpanda-data/benthos/v4/public/components/pure"
	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCaptureReceivesStreamMetrics(t *testing.T) {
	env := service.GlobalEnvironment().Clone()
	c, err := Register(env, "capture_test")
	require.NoError(t, err)

	b := env.NewStreamBuilder()
	require.NoError(t, b.SetMetricsYAML("capture_test: {}"))
	require.NoError(t, b.SetLoggerYAML("level: none"))
	require.NoError(t, b.AddInputYAML(`generate: {count: 5, interval: "", mapping: 'root = "x"'}`))
	require.NoError(t, b.AddProcessorYAML(`metric: {type: counter, name: seen, labels: {k: "v"}}`))
	require.NoError(t, b.AddProcessorYAML(`metric: {type: gauge, name: last, value: "7"}`))
	require.NoError(t, b.AddOutputYAML(`drop: {}`))
	s, err := b.Build()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, s.Run(ctx))

	assert.Equal(t, int64(5), c.Counter("seen"))
	assert.Equal(t, []string{",root.pipeline.processors.0,v"}, c.Series("seen"), "one series, with its label values (Benthos adds the component label and path)")
	assert.Equal(t, int64(7), c.Gauge("last"))
	assert.Equal(t, int64(7), c.Peak("last"))
	assert.NotEmpty(t, c.Timings("output_latency_ns"), "built-in timers are captured too")
}

func TestQuantile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	assert.Equal(t, 50*time.Millisecond, Quantile(d, 0.5))
	assert.Equal(t, 99*time.Millisecond, Quantile(d, 0.99))
	assert.Equal(t, 100*time.Millisecond, Quantile(d, 1))
	assert.Equal(t, time.Duration(0), Quantile(nil, 0.5))
}

// A gauge's value is summed over its label values; its peak is the highest
// sum it reached, kept after it went down again.
func TestGaugeSumAndPeak(t *testing.T) {
	c := New()
	ctor := exporter{c}.NewGaugeCtor("g", "partition")
	a, b := ctor("p0"), ctor("p1")
	a.Set(2)
	b.Set(3)
	assert.Equal(t, int64(5), c.Gauge("g"))
	a.Set(0)
	b.Set(1)
	assert.Equal(t, int64(1), c.Gauge("g"))
	assert.Equal(t, int64(5), c.Peak("g"))
	assert.Zero(t, c.Peak("never"))
}
