package kafka

import (
	"math/rand/v2"
	"time"

	"strings"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/bloblang"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// valueSpec has one field of each rule.
func valueSpec() *service.ConfigSpec {
	return service.NewConfigSpec().Fields(
		service.NewDurationField("wait").Default("1s").LintRule(DurationLintRule("wait")),
		service.NewStringField("size").Default("1MiB").LintRule(ByteSizeLintRule("size")),
		service.NewIntField("limit").Default(5).LintRule(IntRangeLintRule("limit", 1, 0)),
		service.NewIntField("ratio").Default(5).LintRule(IntRangeLintRule("ratio", 0, 100)),
	)
}

// TestValueRulesLintAsTheyFail: every value that fails at start fails lint
// with the same text, and every value that lints clean starts.
func TestValueRulesLintAsTheyFail(t *testing.T) {
	env := service.NewEnvironment()
	require.NoError(t, env.RegisterInput("value_rules", valueSpec(), func(conf *service.ParsedConfig, _ *service.Resources) (service.Input, error) {
		return nil, nil
	}))
	linter := env.NewComponentConfigLinter()
	build := func(yaml string) error {
		conf, err := valueSpec().ParseYAML(yaml, nil)
		require.NoError(t, err)
		if _, err := DurationField(conf, "wait"); err != nil {
			return err
		}
		if _, err := ByteSizeField(conf, "size"); err != nil {
			return err
		}
		for _, f := range []struct {
			name     string
			min, max int
		}{{"limit", 1, 0}, {"ratio", 0, 100}} {
			v, err := conf.FieldInt(f.name)
			require.NoError(t, err)
			if err := IntRangeError(f.name, v, f.min, f.max); err != nil {
				return err
			}
		}
		return nil
	}
	for _, tc := range []struct{ yaml, want string }{
		{"wait: 10\n", `wait must be a duration with a unit (e.g. 500ms, 30s, 2m), got "10"`},
		{"wait: ten\n", `wait must be a duration with a unit (e.g. 500ms, 30s, 2m), got "ten"`},
		{"wait: 0s\n", `wait must be positive, got "0s"`},
		{"wait: -1m\n", `wait must be positive, got "-1m"`},
		{"size: lots\n", `size must be a positive byte size such as 1048576, 512KiB, 1MiB or 2MB (at most 1GiB), got "lots"`},
		{"size: 0\n", `got "0"`},
		{"size: 2GiB\n", `got "2GiB"`},
		{"size: 1.5MB\n", `got "1.5MB"`},
		{"limit: 0\n", "limit must be at least 1, got 0"},
		{"ratio: 101\n", "ratio must be between 0 and 100, got 101"},
		{"ratio: -1\n", "ratio must be between 0 and 100, got -1"},
		{"wait: 250ms\nsize: 512KiB\nlimit: 1\nratio: 100\n", ""},
		{"size: 1048576\n", ""},
		{"size: 1 GiB\n", ""},
		{"", ""},
	} {
		lints, err := linter.LintInputYAML([]byte("value_rules:\n" + indentLines(tc.yaml)))
		require.NoError(t, err)
		var lintText []string
		for _, l := range lints {
			lintText = append(lintText, l.What)
		}
		startErr := build(tc.yaml)
		if tc.want == "" {
			assert.Empty(t, lintText, tc.yaml)
			assert.NoError(t, startErr, tc.yaml)
			continue
		}
		require.Len(t, lintText, 1, tc.yaml)
		require.Error(t, startErr, tc.yaml)
		assert.Equal(t, startErr.Error(), lintText[0], "lint and start say the same for %q", tc.yaml)
		assert.Contains(t, lintText[0], tc.want)
	}
}

func indentLines(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if l != "" {
			b.WriteString("  " + l + "\n")
		}
	}
	if b.Len() == 0 {
		return "  {}\n"
	}
	return b.String()
}

// TestBloblangDurationMatchesGo renders durations with the Bloblang
// expression and with time.Duration.String and compares them.
func TestBloblangDurationMatchesGo(t *testing.T) {
	exec, err := bloblang.Parse(`root = ` + BloblangDuration("this"))
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []time.Duration{1, 999, time.Microsecond, 1500, time.Millisecond, 1500 * time.Microsecond, 250 * time.Millisecond,
		time.Second, 1500 * time.Millisecond, 30 * time.Second, time.Minute, 90 * time.Second, time.Hour, 25*time.Hour + time.Second,
		45 * time.Second, 60 * time.Second, 61*time.Minute + 500*time.Millisecond}
	for range 300 {
		// Whole milliseconds up to a day: what configurations hold.
		cases = append(cases, time.Duration(rng.Int64N(int64(24*time.Hour/time.Millisecond))+1)*time.Millisecond)
	}
	for _, d := range cases {
		got, err := exec.Query(int64(d))
		require.NoError(t, err, d)
		assert.Equal(t, d.String(), got, "%d ns", int64(d))
	}
}
