package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// endToEnd names, for every shipped config, the test that runs it end to end
// (from its source, Kafka or a file, into the emulator, the tables checked):
// the file holding the test and the test's name.
var endToEnd = map[string][2]string{
	"config/envelope.yaml":            {"config/config_test.go", "TestConfigsRunAgainstKafkaAndEmulator"},
	"config/maxwell.yaml":             {"config/config_test.go", "TestConfigsRunAgainstKafkaAndEmulator"},
	"config/debezium.yaml":            {"config/debezium_test.go", "TestDebeziumConfigRuns"},
	"examples/demo.yaml":              {"commands/demo/demo_test.go", "TestDemoVerifiesTheWholePipeline"},
	"examples/envelope_file.yaml":     {"examples_test.go", "TestExampleEnvelopeFile"},
	"examples/maxwell_file.yaml":      {"examples_test.go", "TestExampleMaxwellFile"},
	"examples/dead_letter.yaml":       {"examples_test.go", "TestExampleDeadLetter"},
	"examples/dead_letter_kafka.yaml": {"examples_test.go", "TestExampleDeadLetterKafka"},
}

// Every config the repository ships is run end to end by a test that names
// it: a new config without one fails here.
func TestEveryShippedConfigRunsEndToEnd(t *testing.T) {
	var shipped []string
	for _, dir := range []string{"config", "examples"} {
		m, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		require.NoError(t, err)
		for _, f := range m {
			if filepath.Base(f) == "alerts.yaml" {
				continue // Prometheus rules, not a pipeline (metrics/prometheus/alerts_test.go)
			}
			shipped = append(shipped, filepath.ToSlash(f))
		}
	}
	sort.Strings(shipped)
	require.NotEmpty(t, shipped)
	for _, f := range shipped {
		where, ok := endToEnd[f]
		if !assert.True(t, ok, "%s is shipped but no test runs it end to end: add one and list it in endToEnd", f) {
			continue
		}
		src, err := os.ReadFile(where[0])
		require.NoError(t, err)
		assert.Contains(t, string(src), "func "+where[1]+"(t *testing.T)", "%s: the test exists", f)
		assert.Contains(t, string(src), filepath.Base(f), "%s: %s names the config", f, where[0])
	}
	for f := range endToEnd {
		assert.Contains(t, shipped, f, "endToEnd lists a config that is not shipped")
	}
}

// What the examples write by default, run from the repository root as
// their comments say, is ignored by git: a run leaves the clone clean.
func TestExampleOutputsAreIgnoredByGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git here")
	}
	if out, err := exec.Command("git", "rev-parse", "--is-inside-work-tree").Output(); err != nil || strings.TrimSpace(string(out)) != "true" {
		t.Skip("not a git work tree")
	}
	outputs := regexp.MustCompile(`\$\{DEAD_LETTER_FILE:([^}]*)\}`)
	files, err := filepath.Glob("examples/*.yaml")
	require.NoError(t, err)
	found := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range outputs.FindAllStringSubmatch(string(b), -1) {
			found++
			err := exec.Command("git", "check-ignore", "-q", "--no-index", m[1]).Run()
			assert.NoError(t, err, "%s writes %s by default, which git does not ignore", f, m[1])
		}
	}
	assert.Positive(t, found, "the examples write a dead-letter file")
}
